// Shared by the browser tests and `bash web/serve.sh`: a static file server for web/ on
// 127.0.0.1, and headless Chromium with WebGPU (SwiftShader). Run directly, it serves and
// prints the URLs: `node web/harness.mjs [port]`.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.dirname(fileURLToPath(import.meta.url));
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };

/// Serves web/ (`/` is index.html); resolves to { server, base } once listening.
export async function serve(port = 0) {
  const server = http.createServer((req, res) => {
    let name = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (name === '/') name = '/index.html';
    const file = path.join(root, name);
    if (!file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    res.end(fs.readFileSync(file));
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

/// Headless Chromium with WebGPU on SwiftShader (a fresh temporary profile per launch).
export async function launch() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--enable-unsafe-webgpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic',
      '--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-angle=swiftshader'],
  });
}

/// Runs one browser test: `body({ page, base, fail })` on a fresh page of the served web/;
/// `fail(msg)` records a failure, a thrown error is one. Exits 1 on any failure.
export async function browserTest(body) {
  const { server, base } = await serve();
  const browser = await launch();
  let failed = false;
  const fail = (msg) => { console.error('FAIL: ' + msg); failed = true; };
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('console', (m) => console.log('[page]', m.text()));
    await body({ page, base, fail });
  } catch (e) {
    fail(String(e));
  } finally {
    await browser.close();
    server.close();
  }
  if (failed) process.exit(1);
  console.log('1 passed, 0 failed');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { base } = await serve(Number(process.argv[2] ?? 8080));
  console.log(`visualizer: ${base}/demo.html   (settings in the hash, e.g. ${base}/demo.html#model=tiny&policy=fdsr&budget=4)`);
  console.log(`smoke test: ${base}/index.html`);
  console.log('Ctrl-C stops the server.');
}
