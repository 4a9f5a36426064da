// The quickstart with the TypeScript SDK (@animal-store/client): sign up, get a key, then a
// category, pets, a page walk, an order, the inventory and a message. `quickstart.sh` makes
// the same calls with curl. Against a local `npm start`:
//
//   npm run build -w @animal-store/client
//   node examples/quickstart.mjs                      # ANIMAL_STORE_URL=http://127.0.0.1:8080
import { AnimalStoreError, createClient } from '@animal-store/client';

const baseUrl = process.env.ANIMAL_STORE_URL ?? 'http://127.0.0.1:8080';
const email = process.env.ANIMAL_STORE_EMAIL ?? `quickstart-${Date.now()}@example.com`;
const password = 'correct horse battery';

// 1. An account and an API key (no key needed for these; keys are managed with the password).
const anonymous = createClient({ baseUrl });
await anonymous.accounts.create({ email, password });
const { key } = await anonymous.keys.create({ email, password }, { name: 'quickstart' });
console.log('key', key.slice(0, 12));

// 2. Every call from here on uses the key. The client backs off as the service asks (429 and
//    503 with Retry-After) and sends each POST with an Idempotency-Key, so its retries are safe.
const client = createClient({ apiKey: key, baseUrl });
const dogs = await client.categories.create({ name: 'Dogs' });
const rex = await client.pets.create({ name: 'Rex', categoryId: dogs.id });
const bella = await client.pets.create({ name: 'Bella', categoryId: dogs.id });
console.log('pets', rex.id, bella.id);

// 3. Every available pet, whatever the number of pages (the client follows Link rel="next").
for await (const pet of client.pets.list({ status: 'available', limit: 1 })) {
  console.log('available', pet.id, pet.name);
}

// 4. Change and remove; read one pet by id.
await client.pets.update(rex.id, { status: 'sold' });
console.log('rex is', (await client.pets.get(rex.id)).status);
await client.pets.delete(rex.id);

// 5. An order moves Bella to pending, then sold.
const order = await client.store.orders.create({ petId: bella.id });
await client.store.orders.update(order.id, { status: 'approved' });
await client.store.orders.update(order.id, { status: 'delivered' });
console.log('order', order.id, 'inventory', JSON.stringify(await client.store.inventory()));

// 6. A message through the quickstart endpoint, then its record once the worker has sent it.
const queued = await client.messages.send('Hello, store!');
let message = await client.messages.get(queued.id);
for (let i = 0; i < 50 && message.status !== 'sent'; i++) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  message = await client.messages.get(queued.id);
}
console.log('message', message.id, message.status);

// 7. Errors are thrown as AnimalStoreError, with the service's code and the request id.
try {
  await client.categories.get(999);
} catch (error) {
  if (!(error instanceof AnimalStoreError)) throw error;
  console.log('error', error.status, error.code, error.requestId);
}
console.log('rate limit', client.rateLimit?.remaining, 'of', client.rateLimit?.limit);
