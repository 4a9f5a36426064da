/** The smallest buffer a pool hands out. */
const SMALLEST = 2_048;

/**
 * Buffers used again, of power-of-two sizes (docs/decisions/0064-request-log-buffers.md): a
 * caller takes one and gives it (or any view of it) back once nothing reads it any more. Past
 * `maxBytes` held, the size holding the most (not the one given back) is let go first.
 */
export class BytePool {
  /** Free buffers by size. */
  private readonly free = new Map<number, ArrayBuffer[]>();
  /** The buffers this pool made: only these are taken back. */
  private readonly made = new WeakSet<ArrayBuffer>();
  /** Those free now: one given back twice before it is taken again is kept once. (One given
   * back by a holder that no longer has it, after another took it, cannot be told apart.) */
  private readonly isFree = new WeakSet<ArrayBuffer>();
  /** Bytes in `free`. */
  private held = 0;
  /** Buffers it has made, each once (those handed out again are not counted again). */
  private madeCount = 0;

  /** @param maxBytes the most bytes kept free (0: none; every buffer is then a new one) */
  constructor(private readonly maxBytes: number) {}

  /** A buffer of `atLeast` bytes or more (a power of two, 2 KB at least); its bytes are not
   * cleared. */
  take(atLeast: number): Buffer {
    let size = SMALLEST;
    while (size < atLeast) size *= 2;
    const buffer = this.free.get(size)?.pop();
    if (buffer !== undefined) {
      this.held -= size;
      this.isFree.delete(buffer);
      return Buffer.from(buffer);
    }
    const made = new ArrayBuffer(size);
    this.made.add(made);
    this.madeCount++;
    return Buffer.from(made);
  }

  /** Takes back a buffer it handed out, or a view of one: its bytes may be written over from
   * now on. Anything else is ignored. */
  give(bytes: Uint8Array): void {
    const buffer = bytes.buffer;
    if (!(buffer instanceof ArrayBuffer) || !this.made.has(buffer) || this.isFree.has(buffer)) {
      return;
    }
    const size = buffer.byteLength;
    if (size > this.maxBytes) return;
    while (this.held + size > this.maxBytes) if (!this.letGoOtherThan(size)) return;
    let sized = this.free.get(size);
    if (sized === undefined) {
      sized = [];
      this.free.set(size, sized);
    }
    sized.push(buffer);
    this.isFree.add(buffer);
    this.held += size;
  }

  /** Lets go of a free buffer of the size holding the most bytes but `size`; false if none. */
  private letGoOtherThan(size: number): boolean {
    let most: ArrayBuffer[] | undefined;
    let mostBytes = 0;
    for (const [sized, buffers] of this.free) {
      const bytes = sized * buffers.length;
      if (sized !== size && bytes > mostBytes) {
        most = buffers;
        mostBytes = bytes;
      }
    }
    const buffer = most?.pop();
    if (buffer === undefined) return false;
    this.isFree.delete(buffer);
    this.held -= buffer.byteLength;
    return true;
  }

  /** Buffers made so far: what it could not hand out again. */
  get buffersMade(): number {
    return this.madeCount;
  }

  /** Bytes kept free now. */
  get bytesFree(): number {
    return this.held;
  }
}
