package detect

// ParseFindingJSON is ParseFinding reading every record with
// encoding/json: the reference its fast path is held to.
func ParseFindingJSON(data []byte) (Finding, error) {
	f, _, err := parseFinding(data, false)
	return f, err
}
