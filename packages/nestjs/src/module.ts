import { ConfigurationError } from '@justonce/core';
import { optionKeys, rejectUnknownOptions } from '@justonce/core/transport';
import { Module, type DynamicModule, type ModuleMetadata, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createOperationsFor, JUSTONCE_CORE, openCore, type CoreHandle } from './core-handle';
import { IdempotencyRoutes } from './http/routes';
import { IdempotencyInterceptor } from './http/interceptor';
import { ROOT_KEYS } from './options/resolve';
import type {
  JustonceModuleOptions,
  JustonceRootOptions,
  OperationsSettings,
} from './options/types';
import { JustonceRuntime } from './runtime';
import {
  getOperationsToken,
  JUSTONCE_MODULE_OPTIONS,
  JUSTONCE_OPERATIONS,
  JUSTONCE_OUTBOX,
  JUSTONCE_STORE,
} from './tokens';

/** Options of `JustonceModule.forRootAsync`: a factory of the module's options. */
export interface JustonceModuleAsyncOptions {
  /** Modules whose providers the factory injects. */
  readonly imports?: ModuleMetadata['imports'];
  /** Tokens of the factory's arguments, in order. */
  readonly inject?: NonNullable<Extract<Provider, { useFactory: unknown }>['inject']>;
  /** Makes the module's options, e.g. from a `ConfigService`. */
  readonly useFactory: (...args: never[]) => JustonceModuleOptions | Promise<JustonceModuleOptions>;
  /** Register the module globally. Default `true`. */
  readonly isGlobal?: boolean;
}

/** One `Operations` of `forFeature`: its operation name, and its own settings. */
export type FeatureOperation = OperationsSettings & { readonly operation: string };

/** Options of `JustonceModule.forFeature`. */
export interface JustonceFeatureOptions {
  /** `Operations` to provide, each under `getOperationsToken(name)` (`@InjectOperations(name)`). */
  readonly operations?: readonly (string | FeatureOperation)[];
}

const ASYNC_KEYS = optionKeys<JustonceModuleAsyncOptions>()([
  'imports',
  'inject',
  'useFactory',
  'isGlobal',
]);
const FEATURE_KEYS = optionKeys<JustonceFeatureOptions>()(['operations']);

const EXPORTS = [
  JUSTONCE_STORE,
  JUSTONCE_OUTBOX,
  JUSTONCE_OPERATIONS,
  JUSTONCE_CORE,
  IdempotencyRoutes,
  JustonceRuntime,
];

/** The providers every root module has, on top of its options provider. */
const ROOT_PROVIDERS: Provider[] = [
  { provide: JUSTONCE_CORE, useFactory: openCore, inject: [JUSTONCE_MODULE_OPTIONS] },
  {
    provide: JUSTONCE_STORE,
    useFactory: (core: CoreHandle) => core.store,
    inject: [JUSTONCE_CORE],
  },
  {
    provide: JUSTONCE_OUTBOX,
    useFactory: (core: CoreHandle) => core.outbox,
    inject: [JUSTONCE_CORE],
  },
  {
    provide: JUSTONCE_OPERATIONS,
    useFactory: (core: CoreHandle) => core.operations,
    inject: [JUSTONCE_CORE],
  },
  IdempotencyRoutes,
  IdempotencyInterceptor,
  JustonceRuntime,
];

/**
 * justonce in a Nest application: the store, the outbox and operations as providers; the
 * `@OnMessage` handlers' consumers and the outbox relays on the application's lifecycle;
 * `@Idempotent` routes. Import `forRoot` (or `forRootAsync`) once, in the root module.
 */
@Module({})
export class JustonceModule {
  /** The module with options given as they are; validated at boot (`ConfigurationError`). */
  static forRoot(options: JustonceRootOptions): DynamicModule {
    rejectUnknownOptions(options, ROOT_KEYS, 'JustonceModule.forRoot');
    const { isGlobal, ...moduleOptions } = options;
    return root(globalOption(isGlobal), [], {
      provide: JUSTONCE_MODULE_OPTIONS,
      useValue: moduleOptions,
    });
  }

  /** The module with options made by a factory (injecting, say, a `ConfigService`). */
  static forRootAsync(options: JustonceModuleAsyncOptions): DynamicModule {
    rejectUnknownOptions(options, ASYNC_KEYS, 'JustonceModule.forRootAsync');
    if (typeof options.useFactory !== 'function') {
      throw new ConfigurationError('JustonceModule.forRootAsync needs useFactory, a function');
    }
    return root(globalOption(options.isGlobal), options.imports ?? [], {
      provide: JUSTONCE_MODULE_OPTIONS,
      useFactory: options.useFactory as (...args: unknown[]) => unknown,
      inject: [...(options.inject ?? [])],
    });
  }

  /**
   * `Operations` with their own default operation name (and settings), for one feature
   * module: `@InjectOperations('charge-card')` then injects the one named `charge-card`.
   */
  static forFeature(options: JustonceFeatureOptions): DynamicModule {
    rejectUnknownOptions(options, FEATURE_KEYS, 'JustonceModule.forFeature');
    const providers: Provider[] = (options.operations ?? []).map((entry) => {
      const own = typeof entry === 'string' ? { operation: entry } : entry;
      if (typeof own?.operation !== 'string' || own.operation === '') {
        throw new ConfigurationError(
          'JustonceModule.forFeature: each of operations must be an operation name or { operation, ... }',
        );
      }
      return {
        provide: getOperationsToken(own.operation),
        useFactory: (core: CoreHandle) => createOperationsFor(core.config, core.store, own),
        inject: [JUSTONCE_CORE],
      };
    });
    return {
      module: JustonceModule,
      providers,
      exports: providers.map((provider) => (provider as { provide: string }).provide),
    };
  }
}

function root(
  global: boolean,
  imports: ModuleMetadata['imports'],
  options: Provider,
): DynamicModule {
  return {
    module: JustonceModule,
    global,
    imports: [DiscoveryModule, ...(imports ?? [])],
    providers: [options, ...ROOT_PROVIDERS],
    exports: EXPORTS,
  };
}

function globalOption(value: unknown): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') {
    throw new ConfigurationError('JustonceModule: isGlobal must be a boolean', {
      isGlobal: typeof value,
    });
  }
  return value;
}
