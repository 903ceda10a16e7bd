import {
  createOperations,
  createOutbox,
  createRelay,
  createStore,
  type Operations,
  type OperationsOptions,
  type Outbox,
  type OutboxOptions,
  type Publisher,
  type Relay,
  type Store,
} from '@justonce/core';
import { isStore, resolveModuleOptions, type ModuleConfig } from './options/resolve';

/** The injection token of the module's {@link CoreHandle}. @internal */
export const JUSTONCE_CORE = 'justonce:core';

/**
 * What the module opens from its options, all or nothing: the store (and whether the module
 * owns it), the outbox, the default operations and the relays (not started). @internal
 */
export interface CoreHandle {
  readonly config: ModuleConfig;
  readonly store: Store;
  /** Whether the module created the store, and so closes it at shutdown. */
  readonly owned: boolean;
  readonly outbox: Outbox;
  readonly operations: Operations;
  /** The relays, each with the publisher it was given (closed after it stopped). */
  readonly relays: readonly { readonly relay: Relay; readonly publisher: Publisher }[];
}

/**
 * Validates the options, opens (and migrates) the store, and creates the outbox, the default
 * operations and the relays. A failure after the store was opened closes it again, so a boot
 * refused for a bad option leaves no pool open. @internal
 */
export async function openCore(options: unknown): Promise<CoreHandle> {
  const config = resolveModuleOptions(options);
  const given = config.options.store;
  const owned = !isStore(given);
  const store = isStore(given) ? given : await createStore(given);
  try {
    if (config.migrate) await store.migrate();
    // Spread: `transactions` is passed only when given (the seam of issue #27).
    const outbox = createOutbox({
      ...config.options.outbox,
      ...config.seam,
      store,
    } as OutboxOptions);
    return {
      config,
      store,
      owned,
      outbox,
      operations: createOperationsFor(config, store, {}),
      relays: config.relays.map((relay) => ({
        relay: createRelay({ ...relay, store }),
        publisher: relay.publisher,
      })),
    };
  } catch (error) {
    if (owned) await store.close().catch(() => undefined);
    throw error;
  }
}

/** `Operations` on the module's store with its settings, `own` over them. @internal */
export function createOperationsFor(
  config: ModuleConfig,
  store: Store,
  own: Partial<OperationsOptions>,
): Operations {
  const options = { ...config.options.operations, ...own, ...config.seam, store };
  return createOperations(options as OperationsOptions);
}
