// Open one flow in mitmweb in Debian's headless Chromium (playwright-core, no downloaded browser),
// check the MCP content view and the flow list, and take screenshots.
//
//   node tests/inspect/mitmweb_view.mjs '{"url": "http://127.0.0.1:PORT/?token=T", "flow": "<id>",
//        "comment": "mcpx: ...", "expect": ["line", ...], "expectOriginal": ["line", ...], "out": "DIR",
//        "command": "mcpx.sessions", "commandExpect": "text in its result"}'
//
// Prints one JSON line: {"view": <content view title>, "original": <title after choosing "mcp original">,
// "seen": [lines found], "commentSeen": bool, "commentsSeen": {start: bool} (cfg.commentStarts), "commandResult": <text mitmweb shows for the command>,
// "screenshots": [paths]}; exits 1 (with {"error"}) on failure.
// Chromium runs headless on loopback only, with a new empty profile that is removed afterwards.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(new URL('../peers/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const cfg = JSON.parse(process.argv[2]);
const CHROMIUM = process.env.MCPX_CHROMIUM || '/usr/bin/chromium';
const TIMEOUT = 15000;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpx-chromium-'));
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: { width: 1600, height: 900 },
  });
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  // mitmweb's own routing: #/flows/<id>/response opens the flow on its Response tab
  await page.goto(`${cfg.url}#/flows/${cfg.flow}/response`);
  const pre = page.locator('.flowview pre, pre').first();
  await pre.getByText(cfg.expect[0], { exact: true }).waitFor();
  const seen = [];
  for (const line of cfg.expect) {
    if (await pre.getByText(line, { exact: true }).first().isVisible()) seen.push(line);
  }
  // the title mitmweb shows above the body: the name of the view it chose ("auto" picks ours)
  const view = (await page.locator('.contentview .controls h5, .contentview h5').first().textContent({ timeout: 2000 })
    .catch(() => null)) ?? null;
  const commentSeen = cfg.comment ? await page.getByText(cfg.comment, { exact: true }).first().isVisible() : false;
  // each comment start the flow list must show (a row of the Comment column beginning with it)
  const commentsSeen = {};
  for (const start of cfg.commentStarts ?? []) {
    const re = new RegExp('^' + start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    commentsSeen[start] = await page.locator('.flow-table td.col-comment').filter({ hasText: re }).first().isVisible()
      .catch(() => false);
  }
  // scroll the detail pane so the view starts at the top (the response headers scroll away)
  await page.locator('.contentview').first().evaluate((el) => el.scrollIntoView({ block: 'start' }));
  fs.mkdirSync(cfg.out, { recursive: true });
  const shots = [path.join(cfg.out, 'mitmweb-mcp-view.png'), path.join(cfg.out, 'mitmweb-mcp-original.png')];
  await page.screenshot({ path: shots[0] });

  // choose "mcp original" in the View menu: the body as the server sent it
  await page.getByText('View:', { exact: false }).first().click();
  await page.getByText('mcp original', { exact: true }).first().click();
  for (const line of cfg.expectOriginal) await pre.getByText(line, { exact: true }).first().waitFor();
  await page.locator('.contentview').first().evaluate((el) => el.scrollIntoView({ block: 'start' }));
  const original = (await page.locator('.contentview .controls h5, .contentview h5').first().textContent({ timeout: 2000 })
    .catch(() => null)) ?? null;
  await page.screenshot({ path: shots[1] });

  // run a command in mitmweb's command bar (Options tab, "Display Command Bar")
  let commandResult = null;
  if (cfg.command) {
    await page.getByText('Options', { exact: true }).first().click();
    await page.getByText('Display Command Bar', { exact: true }).click();
    await page.getByPlaceholder('Enter command').click();
    await page.keyboard.type(cfg.command);
    await page.keyboard.press('Enter');
    const result = page.getByText(cfg.commandExpect, { exact: false }).first();
    await result.waitFor();
    commandResult = await result.textContent();
  }
  process.stdout.write(JSON.stringify({ view, original, seen, commentSeen, commentsSeen, commandResult, screenshots: shots }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n');
  process.exitCode = 1;
} finally {
  if (context) await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
