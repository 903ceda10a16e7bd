/**
 * Where each service of the order-service example finds its database schema, its broker and
 * the others. Every process reads the same environment, which the orchestrator (`run.ts`)
 * writes; run alone, a service falls back to the local addresses of `pnpm services:up`.
 */

/** The local addresses `pnpm services:up` starts (docs/services.md). */
export const LOCAL = {
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/test',
  kafkaBrokers: ['127.0.0.1:39092'],
  amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
} as const;

/** The four services, each its own process with its own schema. */
export const SERVICES = ['orders', 'payments', 'shipping', 'provider'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** The names one run uses. A run id keeps runs (and tests) apart on shared servers. */
export interface RunNames {
  /** The run id, `[a-z0-9_]+`. */
  readonly run: string;
  /** Each service's PostgreSQL schema. */
  readonly schemas: Readonly<Record<ServiceName, string>>;
  /** The Kafka topic of `order.created`. */
  readonly orderTopic: string;
  /** The RabbitMQ queue of `payment.captured`. */
  readonly paymentQueue: string;
  /** The payments service's Kafka consumer group. */
  readonly paymentsGroup: string;
}

/** The names of run `run`. */
export function runNames(run: string): RunNames {
  if (!/^[a-z0-9_]{1,20}$/.test(run)) {
    throw new Error(`a run id is 1-20 characters of [a-z0-9_], got ${JSON.stringify(run)}`);
  }
  return {
    run,
    schemas: {
      orders: `orders_${run}`,
      payments: `payments_${run}`,
      shipping: `shipping_${run}`,
      provider: `provider_${run}`,
    },
    orderTopic: `order.created.${run}`,
    paymentQueue: `payment.captured.${run}`,
    paymentsGroup: `payments-${run}`,
  };
}

/** Everything a service process needs. */
export interface ServiceConfig {
  readonly names: RunNames;
  readonly databaseUrl: string;
  readonly kafkaBrokers: readonly string[];
  readonly amqpUrl: string;
  /** Where the orders API listens. */
  readonly ordersPort: number;
  /** Where the fake payment provider listens. */
  readonly providerPort: number;
  /** Seed of the provider's failures. */
  readonly seed: number;
}

/** How long the payments service waits for the provider before it calls again. */
export const PROVIDER_TIMEOUT_MS = 400;
/** How long the provider holds a "slow" answer: past the client's time limit. */
export const PROVIDER_SLOW_MS = 1_000;

function numberFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be an integer`);
  return value;
}

/** The configuration in `env` (the orchestrator's variables, or the local defaults). */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  return {
    names: runNames(env.ORDER_SERVICE_RUN ?? 'local'),
    databaseUrl: env.DATABASE_URL || LOCAL.databaseUrl,
    kafkaBrokers: (env.KAFKA_BROKERS || LOCAL.kafkaBrokers.join(',')).split(','),
    amqpUrl: env.AMQP_URL || LOCAL.amqpUrl,
    ordersPort: numberFrom(env, 'ORDERS_PORT', 3000),
    providerPort: numberFrom(env, 'PROVIDER_PORT', 3001),
    seed: numberFrom(env, 'ORDER_SERVICE_SEED', 2024),
  };
}

/** The environment that gives a service process `config`. */
export function envOf(config: ServiceConfig): Record<string, string> {
  return {
    ORDER_SERVICE_RUN: config.names.run,
    DATABASE_URL: config.databaseUrl,
    KAFKA_BROKERS: config.kafkaBrokers.join(','),
    AMQP_URL: config.amqpUrl,
    ORDERS_PORT: String(config.ordersPort),
    PROVIDER_PORT: String(config.providerPort),
    ORDER_SERVICE_SEED: String(config.seed),
  };
}
