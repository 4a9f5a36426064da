/** Generated from package.json by `npm run build`; a test checks that they agree. */
export const VERSION = '1.0.0';
