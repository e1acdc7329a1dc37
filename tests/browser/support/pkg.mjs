// The package under test, as a user gets it: the packed tarball installed into a scratch
// project with npm (offline: the tarball has no dependencies). With only TPSMETER_PKG_DIR
// (a built pkg/ with dist/ and wasm/), that directory is used as it is.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { env } from './env.mjs';

let installed;

/**
 * Resolves to { project, dir }: the scratch project holding node_modules/tpsmeter, and the
 * installed package's directory. Skips or fails `t` when there is no package to test.
 */
export function installPackage(t) {
  if (installed) return installed;
  const tarball = env.pkgTarball && fs.existsSync(env.pkgTarball) ? env.pkgTarball : undefined;
  if (!tarball) {
    if (env.pkgDir && fs.existsSync(path.join(env.pkgDir, 'dist', 'index.js'))) {
      installed = { project: undefined, dir: path.resolve(env.pkgDir) };
      return installed;
    }
    const why = 'TPSMETER_PKG_TARBALL (or a built TPSMETER_PKG_DIR) is not available';
    if (env.requireAssets) throw new Error(`${why} (TPSMETER_REQUIRE_ASSETS=1: required)`);
    t.skip(`${why}; run \`cargo xtask pkg\` or \`cargo xtask browser-test\``);
    return undefined;
  }
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-app-'));
  // ~5 MB each; one per test process, so they piled up in /tmp run after run.
  process.on('exit', () => fs.rmSync(project, { recursive: true, force: true }));
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'tpsmeter-scratch-app', private: true, type: 'module' }, null, 2),
  );
  execFileSync(
    'npm',
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--cache', path.join(project, '.npm-cache'), path.resolve(tarball)],
    { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  installed = { project, dir: path.join(project, 'node_modules', 'tpsmeter') };
  return installed;
}
