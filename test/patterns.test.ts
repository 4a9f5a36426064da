/**
 * The patterns of the document are written so that every validator reads them alike (issue 20):
 * explicit ranges instead of `\p{…}`, which validators without the `u` flag read as letters (and
 * so refused "Hounds" and "Hello, store!"). They must accept exactly what the `\p{…}` patterns
 * they replace did, read with the `u` flag (as Ajv, and so the service, reads them) and without.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  NO_LONE_SURROGATES_PATTERN,
  STORABLE_TEXT_PATTERN,
  TEXT_PATTERN,
} from '../src/http/schemas/common.js';
import { as, createCategory, newTenant, startApp, type TestApp } from './helpers.js';

const PAIRS: Array<[name: string, before: string, now: string]> = [
  // Since issue 31, names refuse bidirectional controls and U+FEFF too.
  ['names', '^(?!\\s*$)[^\\p{Cc}\\p{Cs}\\u202A-\\u202E\\u2066-\\u2069\\uFEFF]+$', TEXT_PATTERN],
  ['passwords', '^[^\\p{Cs}]*$', NO_LONE_SURROGATES_PATTERN],
  ['messages', '^[^\\u0000\\p{Cs}]*$', STORABLE_TEXT_PATTERN],
];

const ACCEPTED = [
  'Hounds',
  'Hello, store!',
  'Rex',
  ' Rex ',
  'Chloé',
  '🐶 Rex',
  '名前',
  'p{Cc}',
  'a\u00A0b',
  // Marks that right-to-left text needs, and joiners: kept.
  'abc\u200Fdef',
  'a\u200Db',
  'שלום',
];
const REFUSED_AS_NAMES = [
  '',
  ' ',
  '\u00A0\u3000',
  'Rex\u0000',
  'Rex\n',
  '\t',
  'a\u0085',
  '\uD800',
  'a\uDC00b',
  '\uDBFF',
  'invoice\u202Etxt.exe',
  '\u2066Rex\u2069',
  'Rex\u2067',
  '\u202A',
  '\uFEFFRex',
  'Re\uFEFFx',
];

/** Characters from where the classes' edges are, and anything at all. */
const unit = fc.oneof(
  fc.constantFrom(
    '\u0000',
    '\t',
    '\n',
    '\u001F',
    ' ',
    '~',
    '\u007F',
    '\u0085',
    '\u009F',
    '\u00A0',
    '\u00A1',
    '\u1680',
    '\u180E',
    '\u2000',
    '\u200A',
    '\u200B',
    '\u2028',
    '\u2029',
    '\u2029',
    '\u202A',
    '\u202E',
    '\u202F',
    '\u2066',
    '\u2069',
    '\u206A',
    '\u205F',
    '\u3000',
    '\uFEFF',
    '\uD7FF',
    '\uD800',
    '\uDBFF',
    '\uDC00',
    '\uDFFF',
    '\uE000',
    '\uFFFF',
    '\uD83D\uDC36',
    'a',
    'p',
    's',
    'C',
    '{',
  ),
  fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
  fc.integer({ min: 0x10000, max: 0x10ffff }).map((n) => String.fromCodePoint(n)),
);

describe('portable patterns', () => {
  for (const [name, old, now] of PAIRS) {
    it(`accept the same ${name} as the \\p{…} pattern, with and without the u flag`, () => {
      const before = new RegExp(old, 'u');
      const withU = new RegExp(now, 'u');
      const withoutU = new RegExp(now);
      for (const sample of [...ACCEPTED, ...REFUSED_AS_NAMES]) {
        assert.equal(withU.test(sample), before.test(sample), `u: ${JSON.stringify(sample)}`);
        assert.equal(withoutU.test(sample), before.test(sample), `no u: ${JSON.stringify(sample)}`);
      }
      fc.assert(
        fc.property(fc.string({ unit, maxLength: 12 }), (text) => {
          const expected = before.test(text);
          return withU.test(text) === expected && withoutU.test(text) === expected;
        }),
        { numRuns: 5_000 },
      );
    });
  }

  it('accepts "Hounds" and "Hello, store!" and refuses blank or control-character names', () => {
    const name = new RegExp(TEXT_PATTERN);
    for (const sample of ACCEPTED) assert.ok(name.test(sample), JSON.stringify(sample));
    for (const sample of REFUSED_AS_NAMES) assert.ok(!name.test(sample), JSON.stringify(sample));
    // The reason for all this: read without `u`, the old class refused letters p, s, C, c, {, }.
    assert.ok(!/^(?!\s*$)[^p{Cc}p{Cs}]+$/.test('Hounds'));
  });
});

describe('portable patterns in the service', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('takes and refuses the same names and messages as before', async () => {
    const tenant = await newTenant(t.app);
    const hounds = await createCategory(t.app, tenant, 'Hounds');
    assert.equal(hounds.name, 'Hounds');
    for (const name of ACCEPTED) {
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/categories',
        payload: { name },
      });
      assert.equal(res.statusCode, 201, `${JSON.stringify(name)}: ${res.body}`);
    }
    for (const name of REFUSED_AS_NAMES) {
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/categories',
        payload: { name },
      });
      assert.equal(res.statusCode, 400, `${JSON.stringify(name)}: ${res.body}`);
    }
    const message = await as(t.app, tenant, {
      method: 'POST',
      url: '/messages',
      payload: { message: 'Hello, store!' },
    });
    assert.equal(message.statusCode, 202, message.body);
    for (const text of ["\t tabs and\nnew lines\u0085 are the sender's", '🐶']) {
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: text },
      });
      assert.equal(res.statusCode, 202, res.body);
    }
    for (const text of ['NUL \u0000', 'lone \uD800']) {
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: text },
      });
      assert.equal(res.statusCode, 400, res.body);
    }
  });
});
