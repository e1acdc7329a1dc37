// When the tab was hidden. Hidden tabs pause requestAnimationFrame and throttle timers, so
// paint times and timer-driven schedules from those periods are not what a user would see.

/** Hidden periods as [from, to) on the `performance.now()` clock (to = Infinity: still hidden). */
export class VisibilityLog {
  private readonly periods: [number, number][] = [];
  private readonly onChange = (): void => this.note(performance.now());

  constructor() {
    if (typeof document === 'undefined') return;
    if (document.visibilityState === 'hidden') this.periods.push([performance.now(), Infinity]);
    document.addEventListener('visibilitychange', this.onChange);
  }

  private note(t: number): void {
    const last = this.periods[this.periods.length - 1];
    const open = last !== undefined && last[1] === Infinity;
    if (document.visibilityState === 'hidden') {
      if (!open) this.periods.push([t, Infinity]);
    } else if (open) {
      last[1] = t;
    }
  }

  /** Whether the tab was hidden at any time in [from, to]. */
  hiddenDuring(from: number, to: number): boolean {
    return this.periods.some(([a, b]) => a <= to && b >= from);
  }

  /** Total hidden time up to `now`, ms. */
  hiddenMs(now: number): number {
    return this.periods.reduce((sum, [a, b]) => sum + Math.max(0, Math.min(b, now) - a), 0);
  }

  /** Whether the tab was hidden at all. */
  get wasHidden(): boolean {
    return this.periods.length > 0;
  }

  dispose(): void {
    if (typeof document !== 'undefined') document.removeEventListener('visibilitychange', this.onChange);
  }
}
