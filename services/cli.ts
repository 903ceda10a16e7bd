/**
 * `pnpm services:up | services:down | services:status` — see docs/services.md.
 *
 * - `up [service...]`: finds or starts the services (all of them by default) and prints their
 *   addresses as `export` lines. Idempotent: running services are reused. Uses no
 *   Testcontainers, since containers would end with this command; Docker users run
 *   `docker compose -f docker/compose.yml up -d`, whose ports `up` then finds and reuses.
 * - `down`: stops the Java services this checkout started, and PostgreSQL or RabbitMQ only if
 *   we started them.
 * - `status`: what answers where, and who runs it.
 * - `restart kafka`: stops the native broker this checkout started and starts it again on the
 *   same data (topics, records and committed offsets survive).
 */
import { shown, SERVICES_DIR } from './paths';
import { SERVICES } from './registry';
import { resolveServices } from './resolve';
import { restartNativeKafka } from './kafka';
import { serviceStatus, stopServices } from './lifecycle';
import { SERVICE_NAMES, type ServiceName } from './types';

// The AWS SDK's notice about future Node.js versions says nothing about the services.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

function parseNames(args: string[]): ServiceName[] {
  if (args.length === 0) return [...SERVICE_NAMES];
  for (const arg of args) {
    if (!(SERVICE_NAMES as readonly string[]).includes(arg)) {
      throw new Error(`unknown service "${arg}"; expected one of ${SERVICE_NAMES.join(', ')}`);
    }
  }
  return args as ServiceName[];
}

async function up(args: string[]): Promise<void> {
  const started = Date.now();
  const services = await resolveServices(parseNames(args), {
    containers: false,
    log: (line) => console.log(line),
  });
  console.log(
    `ready in ${((Date.now() - started) / 1000).toFixed(1)} s; state in ${shown(SERVICES_DIR)}`,
  );
  for (const service of services) {
    console.log(`export ${SERVICES[service.name].envVar}='${service.address}'`);
  }
}

async function status(args: string[]): Promise<boolean> {
  const statuses = await serviceStatus(parseNames(args));
  for (const item of statuses) {
    console.log(
      `${item.name.padEnd(8)} ${item.answering ? 'up  ' : 'DOWN'} ${item.address}\n` +
        `         ${item.owner}${item.logFile ? `; log ${item.logFile}` : ''}` +
        (item.reason ? `\n         ${item.reason}` : ''),
    );
  }
  return statuses.every((item) => item.answering);
}

async function main(): Promise<number> {
  const [command, ...args] = process.argv.slice(2);
  switch (command) {
    case 'up':
      await up(args);
      return 0;
    case 'down': {
      const done = await stopServices();
      console.log(done.length > 0 ? done.join('\n') : 'nothing of ours was running');
      return 0;
    }
    case 'restart': {
      if (args.length !== 1 || args[0] !== 'kafka') {
        throw new Error(
          'only `restart kafka` is supported (ElasticMQ keeps nothing to restart with)',
        );
      }
      const started = Date.now();
      await restartNativeKafka(120_000);
      console.log(
        `kafka restarted with its data in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
      return 0;
    }
    case 'status':
      return (await status(args)) ? 0 : 1;
    default:
      console.error(
        'usage: tsx services/cli.ts up [service...] | down | status [service...] | restart kafka',
      );
      return 2;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: Error) => {
    console.error(error.message);
    process.exitCode = 1;
  },
);
