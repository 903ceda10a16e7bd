import { errorMessage } from '@justonce/core/transport';
import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { Relay } from '@justonce/core';
import { JUSTONCE_CORE, type CoreHandle } from './core-handle';
import { IdempotencyRoutes } from './http/routes';
import {
  createModuleConsumer,
  startModuleConsumer,
  stopModuleConsumer,
  type ModuleConsumer,
} from './messages/consumers';
import { findHandlers } from './messages/discover';
import { planConsumers } from './messages/plan';

/**
 * The module's consumers and relays, on the application's lifecycle. Inject it to see what
 * runs (health checks, tests):
 * - `onModuleInit`: finds the `@OnMessage` handlers and creates their consumers, and checks
 *   every `@Idempotent` route's options (a bad one is a `ConfigurationError` at boot);
 * - `onApplicationBootstrap`: starts the consumers, then the relays;
 * - `beforeApplicationShutdown`: stops the consumers, draining (deliveries in flight finish
 *   and are settled), then the relays, then closes the relays' publishers;
 * - `onApplicationShutdown`, after Nest closed the HTTP server: closes the store it opened.
 */
@Injectable()
export class JustonceRuntime
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  private readonly logger = new Logger('JustonceModule');
  private list: ModuleConsumer[] = [];
  private stopped = false;

  constructor(
    @Inject(JUSTONCE_CORE) private readonly core: CoreHandle,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(IdempotencyRoutes) private readonly routes: IdempotencyRoutes,
  ) {}

  /** The consumers, by consumer name. */
  get consumers(): ReadonlyMap<string, ModuleConsumer> {
    return new Map(this.list.map((consumer) => [consumer.name, consumer]));
  }

  /** The relays, in the order of the `relays` option. */
  get relays(): readonly Relay[] {
    return this.core.relays.map(({ relay }) => relay);
  }

  async onModuleInit(): Promise<void> {
    this.checkRoutes();
    const { config, store, outbox } = this.core;
    const plans = planConsumers(
      findHandlers(this.discovery, this.scanner),
      config.options.transports ?? {},
    );
    for (const plan of plans) {
      this.list.push(await createModuleConsumer(plan, { store, outbox, config }));
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await Promise.all(this.list.map(startModuleConsumer));
      for (const { relay } of this.core.relays) await relay.start();
    } catch (error) {
      // Nothing half-started is left behind: what did start stops at once.
      await Promise.allSettled(this.list.map((c) => stopModuleConsumer(c, { drain: false })));
      await Promise.allSettled(this.core.relays.map(({ relay }) => relay.stop({ timeoutMs: 0 })));
      throw error;
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const timeoutMs = this.core.config.shutdownTimeoutMs;
    const stops = await Promise.all(
      this.list.map((consumer) => stopModuleConsumer(consumer, { drain: true, timeoutMs })),
    );
    stops.flat().forEach((error) => this.report('a consumer did not stop cleanly', error));
    await this.settle('a relay did not stop cleanly', ({ relay }) => relay.stop({ timeoutMs }));
    await this.settle('a relay publisher did not close', ({ publisher }) => publisher.close());
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.core.owned) await this.core.store.close();
  }

  /** Resolves every `@Idempotent` route of the controllers now, so bad options fail the boot. */
  private checkRoutes(): void {
    for (const wrapper of this.discovery.getControllers()) {
      const prototype = (wrapper.metatype as { prototype?: object } | null)?.prototype;
      if (prototype === undefined) continue;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const handler = (prototype as Record<string, unknown>)[method];
        if (!IdempotencyRoutes.isIdempotent(handler)) continue;
        this.routes.routeOf(handler as never, `${String(wrapper.name)}.${method}`);
      }
    }
  }

  /** Runs `work` on every relay, logging (not throwing) failures: shutdown goes on. */
  private async settle(
    what: string,
    work: (running: CoreHandle['relays'][number]) => Promise<void>,
  ): Promise<void> {
    const results = await Promise.allSettled(this.core.relays.map(work));
    for (const result of results)
      if (result.status === 'rejected') this.report(what, result.reason);
  }

  private report(what: string, error: unknown): void {
    this.logger.error(`${what}: ${errorMessage(error)}`);
  }
}
