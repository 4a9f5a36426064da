/** Sequence numbers in one millisecond: three base62 digits, as event ids write them. */
export const SEQUENCES_PER_MS = 62 ** 3;

/**
 * Orders what one database's writes make within a millisecond: each `next` is a (millisecond,
 * sequence) pair after every one it gave before, whatever the clock says, so that ids built
 * from them sort in the order they were made (the events of one resource in the order of its
 * changes). One per database, made when it is opened: two apps in one process, each with its
 * database, share nothing of it (docs/decisions/0009-state-owned-by-instances.md).
 */
export class IdClock {
  private lastMs = 0;
  private sequence = 0;

  next(ms: number): { ms: number; sequence: number } {
    if (ms <= this.lastMs) {
      this.sequence++;
      if (this.sequence >= SEQUENCES_PER_MS) {
        this.lastMs++;
        this.sequence = 0;
      }
    } else {
      this.lastMs = ms;
      this.sequence = 0;
    }
    return { ms: this.lastMs, sequence: this.sequence };
  }
}
