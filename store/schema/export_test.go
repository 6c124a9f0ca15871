package schema

// UpgradeStatements is upgradeStatements for the tests, with the server's
// columns given as names by table.
func UpgradeStatements(db string, l Layout, have map[string][]string) ([]string, error) {
	sc := serverColumns{}
	for t, cols := range have {
		sc[t] = map[string]bool{}
		for _, c := range cols {
			sc[t][c] = true
		}
	}
	as, err := upgradeStatements(db, l, sc)
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.sql
	}
	return out, err
}
