// The SAML verifier's real worker module, with a gate a test controls: each task is counted as started,
// verified for real (in this worker thread), and then held until the test hands out a permit. So a test
// can observe the service while a response sits in the verifier, and release responses one at a time.
// workerData.gate is a SharedArrayBuffer of two Int32: [permits, tasks started].
import { workerData } from 'node:worker_threads';
import verifyInThisThread, { type VerifyTask } from '../../src/sso/saml-verify-worker.ts';

export { warm } from '../../src/sso/saml-verify-worker.ts';

const PERMITS = 0;
const STARTED = 1;

export default async function heldVerify(task: VerifyTask) {
  const gate = new Int32Array((workerData as { gate: SharedArrayBuffer }).gate);
  Atomics.add(gate, STARTED, 1);
  const outcome = await verifyInThisThread(task);
  for (;;) {
    const permits = Atomics.load(gate, PERMITS);
    if (permits > 0 && Atomics.compareExchange(gate, PERMITS, permits, permits - 1) === permits) return outcome;
    Atomics.wait(gate, PERMITS, permits, 1_000);
  }
}

/** The test's side of the gate. */
export function samlVerifierGate() {
  const buffer = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  const view = new Int32Array(buffer);
  return {
    verifierOptions: { workerUrl: new URL(import.meta.url), workerData: { gate: buffer } },
    started: () => Atomics.load(view, STARTED),
    release(count = 1) {
      Atomics.add(view, PERMITS, count);
      Atomics.notify(view, PERMITS);
    },
  };
}
