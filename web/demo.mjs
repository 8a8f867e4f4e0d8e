// Browser test of the visualizer: opens web/demo.html at 1280×800 in headless Chromium on WebGPU,
// lets it train at least 20 steps of the policy run (the fp32 run beside it takes steps in turn),
// checks that the loss fell and the panels have data (window.fdsrDemo, published every frame:
// both runs, the codec story, the frontier with the live test accuracy, the batches under the
// memory cap), clicks a tile of the story's feature map, saves web/demo.png and prints the
// timings, among them the time from opening the page to the first trained step and the page's
// timeline of the start-up.
import path from 'node:path';
import { root, browserTest } from './harness.mjs';

await browserTest(async ({ page, base, fail }) => {
  const t0 = Date.now();
  // SwiftShader is slow (seconds per step): the test says how far it is each minute and gives
  // a hung page up after 40 minutes.
  await page.goto(`${base}/demo.html#model=tiny&policy=fdsr&budget=4&batch=8`);
  await page.waitForFunction(() => window.fdsrDemoError || (window.fdsrDemo && window.fdsrDemo.steps >= 1), null,
    { polling: 100, timeout: 600000 });
  // performance.now() counts from the start of the navigation.
  const firstStep = (await page.evaluate(() => performance.now())) / 1000;
  console.log(`first trained step ${firstStep.toFixed(2)} s after opening the page`);
  const done = () => window.fdsrDemoError || (window.fdsrDemo && (window.fdsrDemo.error ||
    (window.fdsrDemo.steps >= 20 && window.fdsrDemo.base_steps >= 19 && window.fdsrDemo.story_bands > 0 &&
     window.fdsrDemo.test_evals >= 1)));
  for (let waited = 0; !(await page.evaluate(done)); waited += 5) {
    if (waited >= 2400) throw new Error(`only ${await page.evaluate(() => window.fdsrDemo?.steps ?? 0)} steps after 40 minutes`);
    if (waited % 60 === 0) console.log(`${waited} s: ${await page.evaluate(() => window.fdsrDemo?.steps ?? 0)} steps`);
    await new Promise((r) => setTimeout(r, 5000));
  }
  const pageError = await page.evaluate(() => window.fdsrDemoError);
  if (pageError) throw new Error('page reported: ' + pageError);
  // A click on the codec story's feature map picks the tile under it: the tile at (0, 0)
  // (the hash starts at tile 1, 1), then the hash keeps it.
  const before = await page.evaluate(() => window.fdsrDemo);
  const [mx, my, mw, mh] = before.story_map;
  const [ph, pw] = before.story_plane;
  if (!(mw > 0 && mh > 0 && ph >= 8 && pw >= 8)) fail(`the feature map is not drawn: ${JSON.stringify(before)}`);
  else {
    await page.mouse.click(mx + (4 / pw) * mw, my + (4 / ph) * mh);
    await page.waitForFunction(() => /tile=0,0,0,0&/.test(location.hash), null, { polling: 100, timeout: 120000 })
      .catch(() => fail('a click on the feature map did not pick tile (0, 0)'));
  }
  const s = await page.evaluate(() => window.fdsrDemo);
  const wall = (Date.now() - t0) / 1000;
  const shot = await page.screenshot({ path: path.join(root, 'demo.png') });
  console.log(`browser demo: ${s.adapter}; ${s.steps} steps; loss ${s.loss_head.toFixed(4)} (first 5) -> ` +
    `${s.loss_tail.toFixed(4)} (last 5); first trained step ${s.first_step_s.toFixed(2)} s after the run was made; ` +
    `${s.steps_per_s.toFixed(2)} steps/s (step time); ${wall.toFixed(1)} s from page load to step ${s.steps}; ` +
    `saved ${s.fp32_bytes} -> ${s.stored_bytes} bytes; fp32 run: ${s.base_steps} steps, loss ${s.base_loss_last.toFixed(4)}, ` +
    `saved ${s.base_fp32_bytes} bytes; codec story: ${s.story_bands} bands with bytes, ${s.story_bytes} bytes; ` +
    `frontier: ${s.frontier_points} points, live test accuracy ${s.test_accuracy.toFixed(3)} (${s.test_evals} evaluations, the last ` +
    `${s.test_seconds.toFixed(2)} s); ` +
    `under ${64} MiB: batch ${s.cap_batch} (policy) vs ${s.cap_batch_fp32} (fp32)`);
  // Where the seconds before the first step went: the page's marks (web/demo.html's, the app's
  // in demo/src/web.rs and run.rs) and the wasm file's download, in order, each with the time
  // since the one before.
  const timeline = await page.evaluate(() => [
    ...performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm'))
      .map((e) => ({ name: `wasm downloaded (${(e.encodedBodySize / 1048576).toFixed(1)} MiB)`, t: e.responseEnd })),
    ...performance.getEntriesByType('mark').map((e) => ({ name: e.name, t: e.startTime })),
  ].sort((a, b) => a.t - b.t));
  let last = 0;
  console.log('timeline (s since opening the page, + since the line before):');
  for (const { name, t } of timeline) {
    console.log(`  ${(t / 1000).toFixed(2).padStart(6)}  +${((t - last) / 1000).toFixed(2).padStart(5)}  ${name}`);
    last = t;
  }
  if (s.error) fail('the run reported: ' + s.error);
  if (!(s.loss_tail < s.loss_head)) fail(`the loss did not fall (${s.loss_head} -> ${s.loss_tail})`);
  if (!(s.records > 0 && s.bit_rows > 0 && s.class_rows > 0)) fail(`panels without data: ${JSON.stringify(s)}`);
  if (!(s.stored_bytes > 0 && s.stored_bytes < s.fp32_bytes)) fail('saved activations were not compressed');
  if (!(s.base_steps >= 19 && s.base_fp32_bytes > s.stored_bytes)) fail(`the fp32 run did not train beside it: ${JSON.stringify(s)}`);
  if (!(s.story_bands > 0 && s.story_bytes > 0)) fail(`the codec story has no data: ${JSON.stringify(s)}`);
  if (!(s.frontier_points > 0)) fail('the frontier has no points');
  // The frontier's live point: test accuracy on held-out images, evaluated while training.
  if (!(s.test_evals >= 1 && s.test_accuracy > 0 && s.test_accuracy <= 1)) fail(`no test accuracy: ${JSON.stringify(s)}`);
  // The largest batch under the memory cap: compression fits more images than fp32.
  if (!(s.cap_batch > s.cap_batch_fp32 && s.cap_batch_fp32 > 0)) fail(`no batches under the cap: ${JSON.stringify(s)}`);
  // The URL hash keeps every setting, the view's (story layer and tile, tab) among them.
  const hash = await page.evaluate(() => location.hash);
  if (!/policy=fdsr&budget=4&.*batch=8.*layer=0&tile=0,0,0,0&tab=frontier&cap=64/.test(hash)) fail(`the hash lacks settings: ${hash}`);
  // The main view fits the 1280×800 viewport: the app measures its three columns.
  if (!s.fits) fail(`the main view does not fit the window: ${JSON.stringify(s)}`);
  // No blank screenshot: a blank canvas compresses to a few kilobytes of PNG.
  if (shot.length < 20000) fail(`the screenshot is nearly blank (${shot.length} bytes of PNG)`);
});
