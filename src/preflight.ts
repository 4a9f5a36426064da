import { readFileSync } from 'node:fs';

/**
 * Stops at once, with one sentence, on a Node.js line the service does not support: imported
 * first by the server and the CLI, so it runs before any other module loads (the SQLite driver
 * crashes some unsupported lines with a bare "Segmentation fault"). The lines are package.json's
 * `engines.node`, the one place they are written: `^22.12.0 || ^24.0.0 || ^26.0.0`.
 */
const { engines } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
) as { engines: { node: string } };

/** Whether `version` (`22.12.0`) meets one of the range's `^X.Y.Z` alternatives. */
export function supported(version: string, range: string): boolean {
  const parts = (v: string) =>
    v
      .replace(/^[\^v]/, '')
      .split('.')
      .map(Number);
  const [major = 0, minor = 0, patch = 0] = parts(version);
  return range.split('||').some((alternative) => {
    const [m = 0, n = 0, p = 0] = parts(alternative.trim());
    return major === m && (minor > n || (minor === n && patch >= p));
  });
}

if (!supported(process.versions.node, engines.node)) {
  // `^22.12.0 || ^24.0.0` reads "22.12+ or 24".
  const lines = engines.node
    .split('||')
    .map((alternative) =>
      alternative
        .trim()
        .replace(/^\^/, '')
        .replace(/(\.0)+$/, ''),
    )
    .map((line) => (line.includes('.') ? `${line.replace(/\.0$/, '')}+` : line));
  const named = `${lines.slice(0, -1).join(', ')} or ${lines.at(-1)}`;
  process.stderr.write(
    `Animal Store API needs Node.js ${named} (package.json "engines"); this is Node.js ` +
      `${process.versions.node}. Install one of those lines (nvm install 24, say) and run it again.\n`,
  );
  process.exit(1);
}
