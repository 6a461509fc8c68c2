// The part of anywidget's model the widget's modules use, for unit tests:
// `change(key, value)` stands for an update from Python, `sent` holds what
// `send` sent.

export function fakeModel(state) {
  const handlers = new Map();
  const sent = [];
  return {
    state,
    sent,
    get: (key) => state[key],
    set(key, value) {
      state[key] = value;
    },
    save_changes() {},
    send: (content) => sent.push(content),
    on(event, fn) {
      handlers.set(event, [...(handlers.get(event) ?? []), fn]);
    },
    off() {},
    change(key, value) {
      state[key] = value;
      for (const fn of handlers.get(`change:${key}`) ?? []) fn();
    },
  };
}
