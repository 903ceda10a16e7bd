import fc from 'fast-check';
import { isInvalidOperationInputError } from '../errors/invalid-operation-input-error';
import { MAX_STEP_LENGTH, onceKey, stepInput, type OnceParent } from './key';

const parent: OnceParent = { kind: 'inbox', namespace: 'payments', scope: 'default', id: 'm-1' };

/** Whether a step name is one the store keeps exactly (see `unstorableText`). */
function storable(text: string): boolean {
  return (
    !text.includes('\u0000') &&
    !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text) &&
    text.charCodeAt(0) !== 0xfeff
  );
}

function refusal(value: unknown): unknown {
  try {
    stepInput(value);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('ctx.once step names', () => {
  it('accepts exactly the storable strings of 1 to 100 characters; refuses the rest typed', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: MAX_STEP_LENGTH + 20 }),
          fc.string({ minLength: MAX_STEP_LENGTH - 2, maxLength: MAX_STEP_LENGTH + 2 }),
          fc.anything(),
        ),
        (value) => {
          const ok =
            typeof value === 'string' &&
            value.length >= 1 &&
            value.length <= MAX_STEP_LENGTH &&
            storable(value);
          const error = refusal(value);
          if (ok) expect(error).toBeUndefined();
          else expect(isInvalidOperationInputError(error)).toBe(true);
        },
      ),
    );
  });
});

describe('ctx.once idempotency keys', () => {
  it('keeps its value: the format is documented and other systems store it', () => {
    expect(onceKey(parent, 'charge')).toBe(
      'once_fbb71d337a4facc7441de3dce5d054717a4805900e8d8e2d4395f98fd92af9a2',
    );
  });

  it('is 69 ASCII characters, and differs whenever any part differs', () => {
    const part = fc.string({ minLength: 1, maxLength: 20 });
    const parents = fc.record({
      kind: fc.constantFrom('inbox' as const, 'operation' as const),
      namespace: part,
      scope: part,
      id: part,
    });
    fc.assert(
      fc.property(parents, part, parents, part, (a, stepA, b, stepB) => {
        const keyA = onceKey(a, stepA);
        expect(keyA).toMatch(/^once_[0-9a-f]{64}$/);
        const same =
          a.kind === b.kind &&
          a.namespace === b.namespace &&
          a.scope === b.scope &&
          a.id === b.id &&
          stepA === stepB;
        expect(keyA === onceKey(b, stepB)).toBe(same);
      }),
    );
    // Parts that would concatenate alike stay apart.
    expect(onceKey({ ...parent, id: 'a' }, 'bc')).not.toBe(onceKey({ ...parent, id: 'ab' }, 'c'));
  });
});
