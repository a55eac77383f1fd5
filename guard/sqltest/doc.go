// Package sqltest holds the tests of guard.SQL on PostgreSQL: the scenarios
// every guarded store must pass (internal/guardtest) and the SQL guard's
// own error cases, on a server the tests start from Debian's postgresql
// package (make postgres) in a temporary directory.
//
// It is a module of its own so that the root module, and every module that
// requires it, does not require a PostgreSQL driver. Run it with make test,
// or: cd guard/sqltest && go test -race ./...
package sqltest
