// What the runner (`cargo xtask browser-test`) passes in, and the rule for missing assets:
// outside CI a test that needs an absent binary or model skips with a message; with
// TPSMETER_REQUIRE_ASSETS=1 (CI) it fails instead.

import fs from 'node:fs';

export const env = {
  chromium: process.env.TPSMETER_CHROMIUM || '/usr/bin/chromium',
  firefox: process.env.TPSMETER_FIREFOX || '/usr/bin/firefox-esr',
  pkgTarball: process.env.TPSMETER_PKG_TARBALL,
  pkgDir: process.env.TPSMETER_PKG_DIR,
  emulatorBin: process.env.TPSMETER_EMULATOR_BIN,
  cliBin: process.env.TPSMETER_CLI_BIN,
  model: process.env.TPSMETER_MODEL,
  llamaServer: process.env.TPSMETER_LLAMA_SERVER,
  requireAssets: process.env.TPSMETER_REQUIRE_ASSETS === '1',
};

/**
 * The path in environment variable `name` when that file exists. Otherwise skips the test
 * `t` (returns undefined), or throws when assets are required.
 */
export function asset(t, name) {
  const path = process.env[name];
  if (path && fs.existsSync(path)) return path;
  const why = path ? `${name}=${path} does not exist` : `${name} is not set`;
  if (env.requireAssets) throw new Error(`${why} (TPSMETER_REQUIRE_ASSETS=1: required)`);
  t.skip(`${why}; run through \`cargo xtask browser-test\``);
  return undefined;
}
