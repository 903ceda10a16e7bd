import { JustonceError } from '../../errors/justonce-error';

/** No dead letter has the given id (it was never written, or was deleted). */
export class DeadLetterNotFoundError extends JustonceError {
  constructor(id: string) {
    super('DEAD_LETTER_NOT_FOUND', `no dead letter with id ${id}`, {
      retriable: false,
      details: { id },
    });
  }
}
