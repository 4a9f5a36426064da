/**
 * `npm run release -w @animal-store/client`: everything a release does but publishing. It
 * builds, runs the package's lints (`lint:package`: publint, @arethetypeswrong/cli), then
 * `npm publish --dry-run`, and fails on any warning of npm's but one: that no one is logged in,
 * which a dry run without credentials always says. Publishing is then `npm publish -w
 * @animal-store/client` by a maintainer who is logged in (its `prepack` builds again).
 *
 * The dry run is offline: npm reads nothing from the registry (it would ask for the versions
 * already published, which a dry run cannot change) and exchanges no CI identity token for a
 * registry token. So it runs without network and tells nothing of the version: the real
 * publish refuses one already published. `--dry-run-only` skips the build and the lints, for a
 * caller that has just run them (the package's test).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const packageDir = fileURLToPath(new URL('../', import.meta.url));
/** The one warning a dry run may give: no credentials, which only a real publish needs. */
const EXPECTED = /^npm warn publish This command requires you to be logged in to .* \(dry-run\)$/;

/** Runs npm in the package's folder; its output goes on to ours, and is also returned. */
function npm(args, env = process.env) {
  const result = spawnSync('npm', args, { cwd: packageDir, env, encoding: 'utf8' });
  process.stdout.write(result.stdout ?? '');
  process.stderr.write(result.stderr ?? '');
  if (result.error) throw result.error;
  return result;
}

/**
 * `npm publish --dry-run`, offline and without the CI's OIDC variables, on the package as built:
 * the warnings it gave, other than the expected one (none when it is clean).
 */
export function publishDryRun() {
  const env = { ...process.env, npm_config_offline: 'true' };
  for (const name of [
    'NPM_ID_TOKEN',
    'ACTIONS_ID_TOKEN_REQUEST_URL',
    'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
  ]) {
    delete env[name];
  }
  const result = npm(['publish', '--dry-run', '--ignore-scripts'], env);
  const warnings = `${result.stdout}\n${result.stderr}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^npm (warn|WARN|error|ERR!)/.test(line) && !EXPECTED.test(line));
  if (result.status !== 0 && warnings.length === 0) {
    warnings.push(`npm publish --dry-run exited with ${result.status}`);
  }
  return warnings;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (!process.argv.includes('--dry-run-only')) {
    // lint:package builds first, then lints the package as packed.
    const lints = npm(['run', 'lint:package']);
    if (lints.status !== 0) {
      console.error('release: the package lints failed.');
      process.exit(1);
    }
  }
  const warnings = publishDryRun();
  if (warnings.length > 0) {
    console.error(`release: npm publish --dry-run is not clean:\n${warnings.join('\n')}`);
    process.exit(1);
  }
  console.log(
    'release: built, linted, and npm publish --dry-run is clean (offline). ' +
      'To publish: npm publish -w @animal-store/client',
  );
}
