// Browser smoke test: serves web/ on 127.0.0.1, opens it in headless Chromium with WebGPU, and
// checks the result against the native run of the same seed (JSON file given as argv[2]).
import fs from 'node:fs';
import path from 'node:path';
import { root, browserTest } from './harness.mjs';

const native = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
await browserTest(async ({ page, base, fail }) => {
  const url = `${base}/?seed=${native.seed ?? 0}`;
  await page.goto(url);
  await page.waitForFunction(() => window.fdsrResult || window.fdsrError, null, { timeout: 300000 });
  const err = await page.evaluate(() => window.fdsrError);
  if (err) throw new Error('page reported: ' + err);
  const web = await page.evaluate(() => window.fdsrResult);
  await page.screenshot({ path: path.join(root, 'smoke.png') });
  console.log(`browser: ${web.adapter}, ${web.policy}, ratio ${web.ratio.toFixed(4)}, rel L2 ${web.rel_l2.toFixed(5)}`);
  console.log(`native:  ${native.adapter}, ${native.policy}, ratio ${native.ratio.toFixed(4)}, rel L2 ${native.rel_l2.toFixed(5)}`);
  const dr = Math.abs(web.ratio - native.ratio) / native.ratio;
  if (dr > 0.005) fail(`ratio differs by ${(dr * 100).toFixed(3)}% (> 0.5%)`);
  if (web.decoded.length !== native.decoded.length) fail('decoded lengths differ');
  // Both decodes approximate the same tensor within the codec's error; their difference is bounded
  // by the sum of the two errors (relative L2), plus slack for rare one-step rounding differences.
  let num = 0, den = 0;
  for (let i = 0; i < web.decoded.length; i++) { const d = web.decoded[i] - native.decoded[i]; num += d * d; den += native.decoded[i] ** 2; }
  const rel = Math.sqrt(num / den);
  const bound = web.rel_l2 + native.rel_l2;
  console.log(`browser vs native decoded: relative L2 difference ${rel.toExponential(3)} (bound ${bound.toExponential(3)})`);
  if (!(rel <= bound)) fail('decoded tensors differ by more than the error bound');
});
