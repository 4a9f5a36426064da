#!/bin/sh
# The calls of quickstart.mjs with curl alone: sign up, get a key, then a category, pets, a
# page walk, an order, the inventory and a message. Against a local `npm start`:
#
#   sh examples/quickstart.sh                      # ANIMAL_STORE_URL=http://127.0.0.1:8080
set -eu
BASE=${ANIMAL_STORE_URL:-http://127.0.0.1:8080}
EMAIL=${ANIMAL_STORE_EMAIL:-quickstart-$(date +%s)@example.com}
PASSWORD='correct horse battery'
JSON='Content-Type: application/json'
# -f: stop at the first error answer; each POST gets an Idempotency-Key, so it may be repeated.
api() { curl -sSf "$@"; echo; }
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",]*\).*/\1/p"; }
newkey() { echo "qs-$(date +%s)-$$-$1"; }

# 1. An account and an API key (managed with the password, HTTP Basic).
api -X POST "$BASE/v1/accounts" -H "$JSON" -H "Idempotency-Key: $(newkey account)" \
  -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}"
KEY=$(api -X POST "$BASE/v1/keys" -u "$EMAIL:$PASSWORD" -H "$JSON" \
  -H "Idempotency-Key: $(newkey key)" -d '{"name":"quickstart"}' | field key)
AUTH="Authorization: Bearer $KEY"

# 2. A category and two pets.
DOGS=$(api -X POST "$BASE/v1/categories" -H "$AUTH" -H "$JSON" \
  -H "Idempotency-Key: $(newkey dogs)" -d '{"name":"Dogs"}' | field id)
REX=$(api -X POST "$BASE/v1/pets" -H "$AUTH" -H "$JSON" -H "Idempotency-Key: $(newkey rex)" \
  -d "{\"name\":\"Rex\",\"categoryId\":$DOGS}" | field id)
BELLA=$(api -X POST "$BASE/v1/pets" -H "$AUTH" -H "$JSON" -H "Idempotency-Key: $(newkey bella)" \
  -d "{\"name\":\"Bella\",\"categoryId\":$DOGS}" | field id)

# 3. Every available pet, following Link rel="next" page by page.
HEADERS=$(mktemp)
trap 'rm -f "$HEADERS"' EXIT
URL="$BASE/v1/pets?status=available&limit=1"
while [ -n "$URL" ]; do
  api -D "$HEADERS" "$URL" -H "$AUTH"
  URL=$(tr -d '\r' < "$HEADERS" | sed -n 's/^[Ll]ink: <\([^>]*\)>; rel="next".*/\1/p')
done

# 4. Change and remove; read one pet by id.
api -X PATCH "$BASE/v1/pets/$REX" -H "$AUTH" -H "$JSON" -d '{"status":"sold"}'
api "$BASE/v1/pets?id=$REX" -H "$AUTH"
curl -sSf -X DELETE "$BASE/v1/pets/$REX" -H "$AUTH"

# 5. An order moves Bella to pending, then sold.
ORDER=$(api -X POST "$BASE/v1/store/orders" -H "$AUTH" -H "$JSON" \
  -H "Idempotency-Key: $(newkey order)" -d "{\"petId\":$BELLA}" | field id)
api -X PATCH "$BASE/v1/store/orders/$ORDER" -H "$AUTH" -H "$JSON" -d '{"status":"approved"}'
api -X PATCH "$BASE/v1/store/orders/$ORDER" -H "$AUTH" -H "$JSON" -d '{"status":"delivered"}'
api "$BASE/v1/store/inventory" -H "$AUTH"

# 6. A message through the quickstart endpoint (no /v1), then its record.
MSG=$(api -X POST "$BASE/messages" -H "$AUTH" -H "$JSON" -H "Idempotency-Key: $(newkey msg)" \
  -d '{"message":"Hello, store!"}' | field id)
sleep 1
api "$BASE/messages/$MSG" -H "$AUTH"

# 7. An error answer: {"code":"not_found","message":…,"status":404} (no -f, to show it).
curl -sS "$BASE/v1/categories/999" -H "$AUTH"; echo
