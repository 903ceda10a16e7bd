/** One claimed outbox row as the relay reads it. @internal */
export interface ClaimedRow {
  readonly id: string;
  readonly destination: string;
  readonly partition_key: string | null;
  readonly message_id: string;
  readonly headers: Record<string, string> | string;
  readonly payload: Uint8Array;
  readonly attempts: number;
}
