package topics

import (
	"fmt"
	"net"
	"strconv"
)

// maxNameLen is Kafka's limit on a topic name.
const maxNameLen = 249

// CheckName says why name cannot be a Kafka topic, or returns nil. Kafka
// allows 1 to 249 of [a-zA-Z0-9._-], except "." and "..". Checking up
// front turns what would be a broker's refusal at the first send (a
// runtime failure, after a timeout) into a clear input error.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty topic name")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed by Kafka", name)
	case len(name) > maxNameLen:
		return fmt.Errorf("topic name of %d characters: Kafka allows at most %d", len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q: character %q at %d: Kafka allows only letters, digits, '.', '_' and '-'", name, c, i+1)
		}
	}
	return nil
}

// CheckBrokers says which broker address is not host:port with a port
// from 1 to 65535, or returns nil.
func CheckBrokers(brokers []string) error {
	if len(brokers) == 0 {
		return fmt.Errorf("no Kafka brokers: set HANDOFF_KAFKA_BROKERS or --kafka-brokers (host:port[,host:port...])")
	}
	for _, b := range brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			return fmt.Errorf("Kafka broker %q: want host:port: %w", b, err)
		}
		if host == "" {
			return fmt.Errorf("Kafka broker %q: no host", b)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("Kafka broker %q: port %q: want a number from 1 to 65535", b, port)
		}
	}
	return nil
}
