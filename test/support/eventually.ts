// Waiting on a condition instead of sleeping: for "within N ms" assertions across processes.

/** Polls `probe` until it returns true or `withinMs` has passed; returns whether it did. */
export async function eventually(probe: () => Promise<boolean>, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  do {
    if (await probe()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  } while (Date.now() < deadline);
  return probe();
}
