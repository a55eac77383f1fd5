package redlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Execer is what [SQLGuard.Update] needs from a database handle: *sql.Tx,
// *sql.DB and *sql.Conn fit. Pass the transaction the rest of the caller's
// work runs in, so that the fenced update commits or rolls back with it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Execer = (*sql.Tx)(nil)
	_ Execer = (*sql.DB)(nil)
	_ Execer = (*sql.Conn)(nil)
)

// SQLGuard fences updates to rows of a SQL table: each row keeps the
// highest fence accepted for it in FenceColumn, and Update changes a row only
// if its fence is at least that one, recording it, in one statement:
//
//	UPDATE <Table> SET <set>, <FenceColumn> = $f
//	WHERE <IDColumn> = $id AND <FenceColumn> <= $f
//
// The statement uses PostgreSQL's $n placeholders (pgx, lib/pq). The fence
// column should be NOT NULL DEFAULT 0, of type bigint (fences up to 2^63-1,
// more than any lock reaches) or numeric(20) for the whole uint64 range, with
// a driver that sends uint64 values as they are (pgx does). Rows must exist
// before they are fenced: insert them with fence 0.
//
// Under PostgreSQL's default isolation (READ COMMITTED), concurrent updates
// of a row wait for each other and each re-checks the fence against the row
// as the other left it, so the stored fence never goes down. Under
// REPEATABLE READ or SERIALIZABLE the later one fails with a serialization
// error instead; retry it in a new transaction.
//
// To fence a read (see [ErrStaleFence] for why a read-modify-write needs
// it), call Update with an empty set before reading the row in the same
// transaction: it records the fence and holds the row lock until the
// transaction ends.
//
// Table is required; IDColumn defaults to "id" and FenceColumn to "fence".
// All three must be plain SQL identifiers (letters, digits and underscores,
// not starting with a digit; Table may be schema-qualified, "schema.table"):
// they are put into the statement as they are. The zero value is not
// usable; a SQLGuard is a value, safe for concurrent use.
type SQLGuard struct {
	Table, IDColumn, FenceColumn string
}

var sqlIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// names validates the identifiers and fills in the defaults.
func (g SQLGuard) names() (table, idCol, fenceCol string, err error) {
	table, idCol, fenceCol = g.Table, g.IDColumn, g.FenceColumn
	if idCol == "" {
		idCol = "id"
	}
	if fenceCol == "" {
		fenceCol = "fence"
	}
	if table == "" {
		return "", "", "", errors.New("redlock: SQLGuard.Table is empty: set it to the table that holds the fenced rows")
	}
	schema, name, qualified := strings.Cut(table, ".")
	if !sqlIdent.MatchString(schema) || (qualified && !sqlIdent.MatchString(name)) {
		return "", "", "", fmt.Errorf("redlock: SQLGuard.Table %q is not a plain SQL identifier (letters, digits and _, not starting with a digit; or schema.table): rename the table or use a view", table)
	}
	for _, c := range []struct{ field, name string }{{"IDColumn", idCol}, {"FenceColumn", fenceCol}} {
		if !sqlIdent.MatchString(c.name) {
			return "", "", "", fmt.Errorf("redlock: SQLGuard.%s %q is not a plain SQL identifier (letters, digits and _, not starting with a digit): rename the column", c.field, c.name)
		}
	}
	if idCol == fenceCol {
		return "", "", "", fmt.Errorf("redlock: SQLGuard.IDColumn and FenceColumn are both %q: the fence needs a column of its own", idCol)
	}
	return table, idCol, fenceCol, nil
}

// Update runs the fenced UPDATE of the row whose IDColumn is id, in tx (the
// caller's transaction; commit or roll back as usual afterwards). set is the
// SET list without the fence, such as "balance = balance + $1, note = $2",
// with args for $1..$k; the guard appends its own placeholders after them
// ($k+1 for the fence, $k+2 for id). set is SQL text: build it in the
// program, never from input. An empty set only records the fence (a fenced
// read, see [SQLGuard]).
//
// If the row's fence is higher than fence, Update changes nothing and returns
// an error matching [ErrStaleFence] that names the table, the row, the fence
// and the row's fence. If there is no such row, the error matches
// [sql.ErrNoRows]. If the update matched more than one row (IDColumn is not
// unique), it has changed them all: Update returns an error, and the caller
// must roll back. Database errors are returned wrapped; the transaction may
// then be aborted.
func (g SQLGuard) Update(ctx context.Context, tx Execer, id any, fence uint64, set string, args ...any) error {
	table, idCol, fenceCol, err := g.names()
	if err != nil {
		return err
	}
	k := len(args)
	fenceArg, idArg := "$"+strconv.Itoa(k+1), "$"+strconv.Itoa(k+2)
	var q strings.Builder
	q.WriteString("UPDATE " + table + " SET ")
	if strings.TrimSpace(set) != "" {
		q.WriteString(set + ", ")
	}
	q.WriteString(fenceCol + " = " + fenceArg + " WHERE " + idCol + " = " + idArg + " AND " + fenceCol + " <= " + fenceArg)
	row := fmt.Sprintf("%s row %s = %v", table, idCol, id)

	res, err := tx.ExecContext(ctx, q.String(), append(args[:k:k], fence, id)...)
	if err != nil {
		return fmt.Errorf("redlock: fenced update of %s (fence %d): %w", row, fence, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("redlock: fenced update of %s (fence %d): rows affected: %w", row, fence, err)
	}
	switch {
	case n == 1:
		return nil
	case n > 1:
		return fmt.Errorf("redlock: fenced update of %s changed %d rows: %s must be unique (a primary key); roll the transaction back", row, n, idCol)
	}

	// Nothing changed: a higher fence, or no such row. Tell them apart.
	var cur sql.NullString
	err = tx.QueryRowContext(ctx, "SELECT "+fenceCol+" FROM "+table+" WHERE "+idCol+" = $1", id).Scan(&cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("redlock: fenced update of %s: no such row: insert it first, with %s = 0: %w", row, fenceCol, err)
	case err != nil:
		return fmt.Errorf("redlock: fenced update of %s (fence %d) changed nothing; reading its fence: %w", row, fence, err)
	case !cur.Valid:
		return fmt.Errorf("redlock: fenced update of %s: its %s is NULL: make the column NOT NULL DEFAULT 0", row, fenceCol)
	}
	if h, perr := strconv.ParseUint(cur.String, 10, 64); perr == nil && h <= fence {
		// Not stale after all: something else filtered the row out.
		return fmt.Errorf("redlock: fenced update of %s (fence %d) changed nothing though its %s is %s: a concurrent delete, a trigger or a row security policy?", row, fence, fenceCol, cur.String)
	}
	return staleFence(row, fence, cur.String)
}
