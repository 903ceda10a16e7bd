import type { Migration } from '../migration';

/**
 * `consumer_resilience`: the last reported state of each consumer's circuit breakers and
 * retry budget (docs/load-shedding.md), for `justonce status` and the dashboard. A row per
 * consumer and breaker key (`*` for the whole consumer, and for a consumer without a
 * breaker, whose `state` is null); the budget's figures over its window are the consumer's,
 * repeated on each of its rows; null columns mean no budget.
 *
 * A table of its own rather than columns of `consumer_activity`: activity is counts that
 * several processes add up per minute, this is a state each process overwrites (on a change,
 * and at most every few seconds while the consumer works), read back by its age.
 */
export const m015ConsumerResilience: Migration = {
  version: 15,
  name: 'consumer_resilience',
  up: ({ table, name }) => [
    `create table if not exists ${table('consumer_resilience')} (
       consumer text not null,
       breaker_key text not null,
       state text,
       state_since timestamptz,
       budget_remaining integer,
       window_ms integer not null,
       first_deliveries bigint not null default 0,
       retries_paid bigint not null default 0,
       retries_shed bigint not null default 0,
       breaker_sheds bigint not null default 0,
       reported_at timestamptz not null default now(),
       constraint ${name('consumer_resilience_pkey')} primary key (consumer, breaker_key)
     )`,
  ],
};
