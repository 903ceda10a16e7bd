/**
 * Test kit for users' own tests: an in-memory at-least-once broker with fault injection
 * (duplicates, concurrent deliveries, crashes at named points) and a harness that wires a
 * store, the broker and an inbox together; and two checks, against a real broker, that a
 * transport's publisher keeps the contract the relay relies on and that its consumer keeps
 * the effectively-once contract.
 *
 * @packageDocumentation
 */
export { createMemoryBroker } from './memory-broker';
export type {
  MemoryBroker,
  MemoryBrokerOptions,
  MemoryMessage,
  MemoryConsumer,
  ConsumeOptions,
  ConsumeSettings,
  DeliveryProcessor,
  DeliveryKind,
  DeliveryResult,
  DeliveryRecord,
  DeadLetteredMessage,
  BrokerStats,
  WhenIdleOptions,
} from './memory-broker';
export { CRASH_POINTS } from './faults';
export type { CrashPoint, FaultRates, FaultInjector, InjectedFaults } from './faults';
export { seededRandom, pickDistinct } from './random';
export type { RandomSource } from './random';
export {
  SimulatedCrashError,
  isSimulatedCrash,
  IdleTimeoutError,
  BrokerClosedError,
} from './errors';
export { createTestHarness } from './harness';
export type { TestHarness, TestHarnessOptions, TestMessage, HarnessCounts } from './harness';
export { checkPublisherContract, CONTRACT_CLAUSES } from './publisher-contract';
export type {
  ContractCheck,
  ContractDelivery,
  PublisherContractOptions,
} from './publisher-contract';
export { checkConsumerContract, CONSUMER_CONTRACT_CLAUSES } from './consumer-contract';
export type {
  ContractMessage,
  ContractConsumerSettings,
  ConsumerFeatures,
  ConsumerContractOptions,
  ConsumerContractCheck,
  RestartFeature,
  PartitionFeature,
  PartitionLogs,
  ContractLogLine,
} from './consumer-contract';
