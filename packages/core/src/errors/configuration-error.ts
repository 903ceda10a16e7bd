import { JustonceError } from './justonce-error';

/** Configuration that cannot work, reported at construction time. */
export class ConfigurationError extends JustonceError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('INVALID_CONFIG', message, { retriable: false, details });
  }
}
