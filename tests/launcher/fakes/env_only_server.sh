#!/bin/sh
# Runs the real tessera-server ($REAL_TESSERA_SERVER) for the end-to-end test, dropping every
# flag for servers so that they start from the TESSERA_* environment alone, as the contract
# allows. The coordinator keeps its flags (its --endpoint-file has no environment default).
if [ "$2" = server ]; then
  exec "$REAL_TESSERA_SERVER"
fi
exec "$REAL_TESSERA_SERVER" "$@"
