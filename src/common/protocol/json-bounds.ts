/**
 * Bounds on the JSON objects the backend hands over whose inner structure the spec does not show
 * (`complete.outcome.response`, `errors`, `warnings`, and the same in `GET /sessions/{id}`). They go on to
 * the screen, the run report and the CLI, which walk them recursively; 100,000 nested arrays passed
 * `JSON.parse` and then overflowed the stack in `JSON.stringify`. The walk here is iterative, so checking
 * cannot overflow, and anything past a bound is refused as a protocol violation before anyone renders it.
 *
 * The limits are the kiosk's own choice (the spec shows none, §8): a real DeviceResponse maps to a few
 * levels (docType → namespace → element → value, a driving-privileges array of objects, dates), so 32
 * levels and 100,000 values leave ample room while a hostile object is stopped at once.
 */
export interface JsonBounds {
  /** Deepest nesting of objects and arrays (the top object is level 1). */
  readonly maxDepth: number;
  /** Most values (objects, arrays, scalars) in the whole tree. */
  readonly maxNodes: number;
  /** Longest object key, in UTF-16 code units. */
  readonly maxKeyChars: number;
}

export const RESPONSE_BOUNDS: JsonBounds = { maxDepth: 32, maxNodes: 100_000, maxKeyChars: 256 };

/** Returns undefined when `value` is within `bounds`, else what is wrong (no data from the value). */
export function jsonBoundsProblem(value: unknown, bounds: JsonBounds = RESPONSE_BOUNDS): string | undefined {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  let nodes = 0;
  while (stack.length > 0) {
    const top = stack.pop();
    if (top === undefined) break;
    nodes++;
    if (nodes > bounds.maxNodes) return `more than ${bounds.maxNodes} values`;
    const current = top.value;
    if (typeof current !== 'object' || current === null) continue;
    const depth = top.depth + 1;
    if (depth > bounds.maxDepth) return `nested deeper than ${bounds.maxDepth} levels`;
    if (Array.isArray(current)) {
      for (const item of current as unknown[]) stack.push({ value: item, depth });
    } else {
      for (const [key, item] of Object.entries(current)) {
        if (key.length > bounds.maxKeyChars) return `a key longer than ${bounds.maxKeyChars} characters`;
        stack.push({ value: item, depth });
      }
    }
    // Pending entries count too, so a single huge array is refused before it is walked to the end.
    if (nodes + stack.length > bounds.maxNodes) return `more than ${bounds.maxNodes} values`;
  }
  return undefined;
}
