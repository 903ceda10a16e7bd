import { ConfigurationError } from '@justonce/core';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { onMessageEntries } from './on-message';
import type { FoundHandler } from './plan';

/**
 * Every `@OnMessage` method of the application's providers. A provider that is not a
 * singleton cannot consume (its instances live per request): a `ConfigurationError`. @internal
 */
export function findHandlers(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
): FoundHandler[] {
  const found: FoundHandler[] = [];
  const seen = new Set<object>();
  for (const wrapper of discovery.getProviders()) {
    const prototype = prototypeOf(wrapper);
    if (prototype === undefined) continue;
    for (const method of scanner.getAllMethodNames(prototype)) {
      const entries = onMessageEntries((prototype as Record<string, unknown>)[method]);
      if (entries.length === 0) continue;
      const where = `${wrapper.metatype?.name ?? String(wrapper.name)}.${method}`;
      const instance: unknown = wrapper.instance;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient || !isObject(instance)) {
        throw new ConfigurationError(
          `@OnMessage on ${where}: the provider must be a singleton (the default scope), not request-scoped or transient`,
        );
      }
      if (seen.has(instance)) continue;
      for (const entry of entries) found.push({ ...entry, instance, method, where });
    }
    if (isObject(wrapper.instance)) seen.add(wrapper.instance);
  }
  return found;
}

function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  const metatype = wrapper.metatype;
  if (typeof metatype !== 'function' || wrapper.inject) {
    // A factory or value provider: scan the instance it made, if any.
    return isObject(wrapper.instance)
      ? (Object.getPrototypeOf(wrapper.instance) as object)
      : undefined;
  }
  return metatype.prototype as object;
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}
