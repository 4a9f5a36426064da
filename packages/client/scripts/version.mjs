/** The text of src/version.ts for a package version (written by scripts/build.mjs). */
export function versionSource(version) {
  return `/** Generated from package.json by \`npm run build\`; a test checks that they agree. */
export const VERSION = '${version}';
`;
}
