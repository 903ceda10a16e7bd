import type { Knex } from 'knex';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { requeueLetter } from '../dead-letters/create-dead-letters';
import { DeadLetterNotFoundError } from '../dead-letters/errors/dead-letter-not-found-error';
import type { DeadLetter } from '../dead-letters/types';
import { ConfigurationError } from '../errors/configuration-error';
import { outboxChannel } from '../outbox/channel';
import { rowsOf } from '../store/migrate';
import { distributionKeyOf, outboxInsertShape, schemaIsDistributable } from '../store/distribution';
import { unstorableText, unwritableText } from '../common/text';
import type { Store } from '../store/store';
import { DeadLetterNotRedeliverableError } from './errors/dead-letter-not-redeliverable-error';
import type { RedeliverOptions } from './types';
import { isRowId, stringOption } from '../config/arguments';
import { isMysql } from '../store/dialect';
import { mysqlInsertIntoOutbox } from './sql/mysql/redeliver';

const REDELIVER_KEYS = optionKeys<RedeliverOptions>()(['destination']);

/** Why the letter cannot become an outbox row, or `undefined` when it can. */
function unredeliverable(letter: DeadLetter): string | undefined {
  if (letter.messageId === null) return 'it has no message id';
  const id = unstorableText(letter.messageId);
  if (id !== undefined) return `its message id ${id}`;
  if (letter.key !== null) {
    const key = unstorableText(letter.key);
    if (key !== undefined) return `its key ${key}`;
  }
  for (const [name, value] of Object.entries(letter.headers)) {
    const why = unwritableText(name) ?? unwritableText(value);
    if (why !== undefined) return `its header ${JSON.stringify(name)} ${why}`;
  }
  return undefined;
}

/**
 * Puts the letter's message into the outbox as a new pending row at the end of its key's
 * queue, in `trx`. A row of the same message id already there (the event first came from
 * this store's outbox and its published row is still kept, or an earlier redelivery) is
 * deleted first: the outbox's `message_id` is unique, and a fresh row id, as the relay's own
 * requeue gives, keeps the event from overtaking events of its key added since.
 */
async function insertIntoOutbox(
  trx: Knex.Transaction,
  store: Store,
  letter: DeadLetter,
  messageId: string,
  destination: string,
): Promise<string> {
  const outbox = store.names.table('outbox');
  const body = letter.body;
  if (isMysql(store)) {
    return mysqlInsertIntoOutbox(trx, outbox, {
      destination,
      key: letter.key,
      messageId,
      headersJson: JSON.stringify(letter.headers),
      payload: typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body),
    });
  }
  await trx.raw(`delete from ${outbox} where message_id = ?`, [messageId]);
  // From the catalog, so that the CLI's and the dashboard's plain stores redeliver too.
  const distributable = await schemaIsDistributable(trx, store.names);
  const shape = outboxInsertShape(distributable ? 'distributable' : 'none');
  const inserted = rowsOf<{ id: string | number }>(
    await trx.raw(
      `insert into ${outbox} (${shape.columns})
       values ${shape.row}
       returning id`,
      [
        destination,
        letter.key,
        messageId,
        JSON.stringify(letter.headers),
        typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body),
        ...(distributable ? [distributionKeyOf(letter.key, messageId)] : []),
      ],
    ),
  )[0];
  // Delivered at commit, so a running relay wakes for the new row (as after its own requeue).
  await trx.raw(`select pg_notify(?, '')`, [outboxChannel(store.names)]);
  return String(inserted?.id);
}

/** `Admin.redeliverDeadLetter`: requeue and outbox insert in one transaction. @internal */
export async function redeliverDeadLetter(
  store: Store,
  id: string,
  options: RedeliverOptions = {},
): Promise<string> {
  rejectUnknownOptions(options, REDELIVER_KEYS, 'redeliverDeadLetter');
  const chosen = stringOption(options.destination, 'destination');
  if (!isRowId(id)) throw new DeadLetterNotFoundError(String(id));
  return store.knex.transaction(async (trx) => {
    const { letter } = await requeueLetter(trx, store.names, id);
    const why = unredeliverable(letter);
    if (why !== undefined || letter.messageId === null) {
      throw new DeadLetterNotRedeliverableError(id, why ?? 'it has no message id');
    }
    const destination = chosen ?? letter.delivery.source;
    if (destination === undefined || destination === '' || unstorableText(destination)) {
      throw new ConfigurationError(
        `dead letter ${id} does not say where it came from: pass the destination option`,
        { id, source: letter.delivery.source ?? null },
      );
    }
    return insertIntoOutbox(trx, store, letter, letter.messageId, destination);
  });
}
