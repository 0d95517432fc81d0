/** Walking the API's paged lists and its events feed. */

/**
 * Every object of a cursor-paged list (`starting_after` = the last id of the page before,
 * `has_more` says another page follows), one page fetched at a time as the loop asks.
 */
export async function* pages<T, Page>(
  load: (after: string | undefined) => Promise<Page>,
  read: (page: Page) => { items: T[]; hasMore: boolean },
  cursorOf: (item: T) => string,
): AsyncGenerator<T, void, undefined> {
  let after: string | undefined;
  for (;;) {
    const { items, hasMore } = read(await load(after));
    yield* items;
    const last = items[items.length - 1];
    if (!hasMore || last === undefined) return;
    after = cursorOf(last);
  }
}

export interface EventFeedPage<E> {
  events: E[];
  next: string;
}

export interface EventFeedOptions {
  /** The `next` cursor to start after; left out, the oldest kept events. */
  after?: string;
  /** Events per page (1..100). */
  limit?: number;
  /** Keep polling when caught up (until `signal` aborts) instead of ending. */
  follow?: boolean;
  /** The wait between polls once caught up, when following. Default 2000 ms. */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

/**
 * The events feed as an async iterable. It ends when a page comes back empty (caught up),
 * unless `follow` is set. `cursor` is the `next` of the last page read: pass it as `after`
 * later to go on from there.
 */
export class EventFeed<E> implements AsyncIterable<E> {
  cursor: string | undefined;

  constructor(
    private readonly load: (after: string | undefined, signal?: AbortSignal) => Promise<EventFeedPage<E>>,
    private readonly options: EventFeedOptions = {},
  ) {
    this.cursor = options.after;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<E> {
    const { follow = false, pollIntervalMs = 2000, signal } = this.options;
    for (;;) {
      const page = await this.load(this.cursor, signal);
      // An empty page still moves the cursor on (API.md "Events").
      this.cursor = page.next;
      yield* page.events;
      if (page.events.length > 0) continue;
      if (!follow || signal?.aborted) return;
      const stopped = await wait(pollIntervalMs, signal);
      if (stopped) return;
    }
  }
}

/** Wait `ms`; true when `signal` aborted meanwhile. */
function wait(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(false);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
