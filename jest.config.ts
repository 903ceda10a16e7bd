import type { Config } from 'jest';

/** Workspace packages resolve to their TypeScript sources in tests, so no build is needed first. */
const moduleNameMapper = {
  '^@justonce/core$': '<rootDir>/../core/src/index.ts',
  '^@justonce/core/testing$': '<rootDir>/../core/src/testing/index.ts',
  '^@justonce/core/transport$': '<rootDir>/../core/src/transport-kit.ts',
  '^@justonce/core/(retry|admin)$': '<rootDir>/../core/src/$1/index.ts',
  '^@justonce/core/(pg|kysely|drizzle|typeorm)$': '<rootDir>/../core/src/adapters/$1.ts',
  '^@justonce/nestjs$': '<rootDir>/../nestjs/src/index.ts',
  '^@justonce/kafka$': '<rootDir>/../kafka/src/index.ts',
  '^@justonce/sqs$': '<rootDir>/../sqs/src/index.ts',
  '^@justonce/rabbitmq$': '<rootDir>/../rabbitmq/src/index.ts',
  '^@justonce/http$': '<rootDir>/../http/src/index.ts',
  '^@justonce/http/express$': '<rootDir>/../http/src/express.ts',
  '^@justonce/http/fastify$': '<rootDir>/../http/src/fastify.ts',
  '^@justonce/dashboard$': '<rootDir>/../dashboard/src/index.ts',
};

const transform: Config['transform'] = {
  '^.+\\.(t|j)sx?$': [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        // NestJS's dependency injection reads the legacy decorators' type metadata.
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
      },
      module: { type: 'commonjs' },
    },
  ],
};

function project(name: string): NonNullable<Config['projects']>[number] {
  return {
    displayName: name,
    rootDir: `<rootDir>/packages/${name}`,
    testMatch: ['<rootDir>/src/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
    testEnvironment: 'node',
    setupFiles: ['<rootDir>/../../test-support/fast-check-seed.ts'],
    transform,
    moduleNameMapper,
  };
}

const config: Config = {
  projects: ['core', 'kafka', 'sqs', 'rabbitmq', 'http', 'nestjs', 'cli', 'dashboard'].map(project),
  globalSetup: '<rootDir>/test-support/global-setup.ts',
  globalTeardown: '<rootDir>/test-support/global-teardown.ts',
  testTimeout: 60_000,
  // Two files at a time: most suites wait on brokers and child processes, not on the CPU, and
  // each uses its own schemas, topics, queues and private servers, so they do not meet.
  maxWorkers: 2,
  // No forceExit: each suite closes its clients, so Jest exits on its own. The global
  // teardown still bounds the wait, saying so, should a client ever stay open.
};

export default config;
