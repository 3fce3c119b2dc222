import { ScimError } from '../../src/scim/errors.ts';

/** The ScimError that `apply` throws; fails the test if it throws nothing or something else. */
export function refusal(apply: () => unknown): ScimError {
  try {
    apply();
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw error;
  }
  throw new Error('expected a ScimError');
}
