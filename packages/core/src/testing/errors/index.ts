export { SimulatedCrashError, isSimulatedCrash } from './simulated-crash-error';
export { IdleTimeoutError } from './idle-timeout-error';
export { BrokerClosedError } from './broker-closed-error';
