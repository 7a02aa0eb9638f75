/**
 * Reads a request body of at most `maxBytes`, refusing early: a declared Content-Length over the limit
 * before a byte is read, otherwise at the first chunk past it, so an oversized body never sits in memory
 * whole. `inspect` sees each chunk as it arrives and may refuse the body there (a JSON nesting scan);
 * the refusal cancels the stream. It may also return a promise: the next chunk is read once it settles
 * (the plane paces a tenant's bodies so). Each caller passes its own layer's errors, so the plane API answers
 * with its error body and the A2A bindings with theirs.
 */
export async function readLimitedBody(
  req: Request,
  maxBytes: number,
  tooLarge: () => Error,
  inspect?: (chunk: Uint8Array) => Error | null | Promise<Error | null>,
): Promise<string> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  // A declared length within the limit can be read whole (the HTTP parser refuses a body longer than its
  // Content-Length), unless each chunk must be looked at.
  if (Number.isFinite(declared) && !inspect) return req.text();
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    let refused = size > maxBytes ? tooLarge() : (inspect?.(value) ?? null);
    if (refused instanceof Promise) refused = await refused;
    if (refused) {
      await reader.cancel().catch(() => undefined);
      throw refused;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
