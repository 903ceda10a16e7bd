import type { Logger } from '@justonce/core';

/**
 * Logs an outage once when it begins (warn) and once when it ends (info, with how long it
 * lasted), however many calls fail in between: a partition of minutes must not flood the
 * log, nor pass without a word. @internal
 */
export class OutageLog {
  private since: number | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly messages: { readonly down: string; readonly up: string },
    private readonly fields: Readonly<Record<string, unknown>>,
  ) {}

  /** True between {@link begin} and {@link end}. */
  get active(): boolean {
    return this.since !== undefined;
  }

  /** Notes a failure; warns only when it starts an outage. */
  begin(error: Error, extra: Record<string, unknown> = {}): void {
    if (this.since !== undefined) return;
    this.since = Date.now();
    this.logger.warn(this.messages.down, { ...this.fields, ...extra, error: error.message });
  }

  /** Notes a success; logs the recovery when it ends an outage. */
  end(extra: Record<string, unknown> = {}): void {
    if (this.since === undefined) return;
    const downMs = Date.now() - this.since;
    this.since = undefined;
    this.logger.info(this.messages.up, { ...this.fields, ...extra, downMs });
  }
}
