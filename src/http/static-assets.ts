import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** For a name that carries its content's hash: a new content gets a new name. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';
/** For a name that keeps its place as its content changes: asked again each time, and answered
 * `304` while it is the same. */
export const REVALIDATE = 'no-cache';

type Coding = 'br' | 'gzip';

const compress: Record<Coding, (body: Buffer) => Promise<Buffer>> = {
  // Quality 6 packs Scalar's bundle of megabytes in a fraction of a second, within a few per
  // cent of quality 9; 11, the default, takes many seconds for a tenth less.
  br: (body) =>
    promisify(brotliCompress)(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 6,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
  gzip: (body) => promisify(gzip)(body, { level: 6 }),
};

/**
 * A file served from memory (docs/decisions/0076-static-assets.md): sent br- or gzip-encoded to
 * a client that takes it, each coding made once, on the first request that asks for it, on
 * libuv's thread pool; with a strong `ETag` (the content's SHA-256, one per coding, as RFC 9110
 * §8.8.3 has it) that `If-None-Match` is answered `304` for, and the `Cache-Control` its route
 * gives.
 */
export class StaticAsset {
  /** Sixteen hex digits of the content's SHA-256: a name that changes with the content. */
  readonly hash: string;
  private readonly tag: string;
  private readonly encodings = new Map<Coding, Promise<Buffer | undefined>>();

  constructor(
    readonly body: Buffer,
    readonly type: string,
  ) {
    const digest = createHash('sha256').update(body).digest('hex');
    this.hash = digest.slice(0, 16);
    this.tag = digest.slice(0, 32);
  }

  /** Answers a GET (or HEAD) for the file. */
  async send(
    request: FastifyRequest,
    reply: FastifyReply,
    cacheControl: string,
  ): Promise<FastifyReply> {
    const coding = chooseCoding(request.headers['accept-encoding']);
    const coded = coding && (await this.codedAs(coding));
    const etag = coded ? `"${this.tag}-${coding}"` : `"${this.tag}"`;
    reply
      .header('vary', 'accept-encoding')
      .header('etag', etag)
      .header('cache-control', cacheControl);
    if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
    if (coded) reply.header('content-encoding', coding);
    return reply.type(this.type).send(coded || this.body);
  }

  private codedAs(coding: Coding): Promise<Buffer | undefined> {
    let coded = this.encodings.get(coding);
    if (!coded) {
      // A compression that fails (out of memory) leaves the file to be sent as it is.
      coded = compress[coding](this.body).catch(() => undefined);
      this.encodings.set(coding, coded);
    }
    return coded;
  }
}

/**
 * The coding to send for an `Accept-Encoding` (RFC 9110 §12.5.3): br or gzip, whichever the
 * client weighs more, br when even; none when it takes neither.
 */
export function chooseCoding(header: string | undefined): Coding | undefined {
  if (!header) return undefined;
  let br: number | undefined;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const part of header.split(',')) {
    const [name = '', ...parameters] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = parameters.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2)) || 0;
    if (name === 'br') br = weight;
    else if (name === 'gzip' || name === 'x-gzip') gzip = weight;
    else if (name === '*') any = weight;
  }
  const brWeight = br ?? any ?? 0;
  const gzipWeight = gzip ?? any ?? 0;
  if (brWeight > 0 && brWeight >= gzipWeight) return 'br';
  return gzipWeight > 0 ? 'gzip' : undefined;
}

/** Whether an `If-None-Match` names `etag`, compared weakly (RFC 9110 §13.1.2). */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

const folders = new Map<string, ReadonlyMap<string, StaticAsset>>();

/** The files of `folder` (not its subfolders) by name, read once per process. */
export function staticFolder(folder: string): ReadonlyMap<string, StaticAsset> {
  let files = folders.get(folder);
  if (!files) {
    files = new Map(
      readdirSync(folder, { withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => [
          entry.name,
          new StaticAsset(
            readFileSync(join(folder, entry.name)),
            TYPES[extname(entry.name)] ?? 'application/octet-stream',
          ),
        ]),
    );
    folders.set(folder, files);
  }
  return files;
}
