#!/bin/sh
# redis-start.sh -- starts the farm's redis-server with deploy/redis.conf and
# the ACL users of deploy/users.acl (the compose and Kubernetes Redis run it).
#
#   redis-start.sh CONF ACL_TEMPLATE DATA_DIR [redis-server flags...]
#
# Environment (each required, any characters but a newline):
#   REDIS_PASSWORD         the `default` user (clients without a user name)
#   REDIS_ADMIN_PASSWORD   zkfarm-admin: the coordinators and `zkfarm tenant`
#   REDIS_WORKER_PASSWORD  zkfarm-worker: the workers (read-only)
# The ACL file is DATA_DIR/users.acl, on the data volume: Redis must be able
# to write it, as `zkfarm tenant add|rotate|remove` save the tenants' users
# there (ACL SAVE). On the first start it is made from ACL_TEMPLATE with each
# CHANGE-ME password replaced by the sha256 of the one given (Redis compares
# hashes; no password is written to disk). Later starts keep the file as it
# is, tenants included: change a password with ACL SETUSER and ACL SAVE
# (docs/OPERATIONS.md, "Tenants").
set -eu

if [ "$#" -lt 3 ]; then
  echo "usage: redis-start.sh CONF ACL_TEMPLATE DATA_DIR [redis-server flags...]" >&2
  exit 2
fi
conf=$1
template=$2
data=$3
shift 3
acl=$data/users.acl

# sha256 of a password, as ACL rules take it (#<hex>).
hash_of() {
  printf '%s' "$1" | sha256sum | cut -d' ' -f1
}

if [ ! -s "$acl" ]; then
  for name in REDIS_PASSWORD REDIS_ADMIN_PASSWORD REDIS_WORKER_PASSWORD; do
    eval "value=\${$name:-}"
    if [ -z "$value" ]; then
      echo "redis-start.sh: $name is not set: the ACL users of $template need it" >&2
      exit 2
    fi
  done
  for user in 'user default ' 'user zkfarm-admin ' 'user zkfarm-worker '; do
    if ! grep -q "^$user" "$template"; then
      echo "redis-start.sh: $template has no line starting '$user'" >&2
      exit 2
    fi
  done
  sed -e "s/ >CHANGE-ME-ADMIN / #$(hash_of "$REDIS_ADMIN_PASSWORD") /" \
    -e "s/ >CHANGE-ME-WORKER / #$(hash_of "$REDIS_WORKER_PASSWORD") /" \
    -e "s/ >CHANGE-ME / #$(hash_of "$REDIS_PASSWORD") /" \
    "$template" >"$acl.new"
  if grep -q 'CHANGE-ME' "$acl.new"; then
    echo "redis-start.sh: $template holds a CHANGE-ME password this script does not know" >&2
    rm -f "$acl.new"
    exit 2
  fi
  mv "$acl.new" "$acl"
  echo "redis-start.sh: wrote $acl from $template"
fi

exec redis-server "$conf" --aclfile "$acl" "$@"
