import type { PageList } from '../pagination.js';
import type { Event, EventType, ListEventsQuery } from '../types.js';
import { type CallOptions, pages, type Requests } from './context.js';

export interface EventsResource {
  /**
   * The account's events of the last 30 days, oldest first, through every page. With `type`,
   * only events of that type, typed as such: `list({ type: 'pet.created' })` yields
   * `Event<'pet.created'>`, whose `data` is a `Pet`.
   */
  list<T extends EventType = EventType>(
    query?: ListEventsQuery & { type?: T | undefined },
    options?: CallOptions,
  ): PageList<Event<T>>;
}

export function eventsResource(requests: Requests): EventsResource {
  const { api } = requests;
  return {
    list: <T extends EventType>(query: ListEventsQuery = {}, o?: CallOptions) =>
      pages<Event<T>>(requests, (init) => api.GET('/events', { params: { query }, ...init }), o),
  };
}
