package cliflag

import (
	"fmt"
	"strings"
	"time"
)

// Zone is a --tz flag: the time zone text output shows beside UTC instead
// of each contract's. "" leaves the contracts' zones (P stays nil),
// "local" is the zone of the machine running the command, any other value
// an IANA name such as Asia/Shanghai or UTC.
type Zone struct{ P **time.Location }

// String returns the zone's name, "" for the contracts' zones.
func (z Zone) String() string {
	if z.P == nil || *z.P == nil {
		return ""
	}
	if *z.P == time.Local {
		return "local"
	}
	return (*z.P).String()
}

// Set parses s as Zone describes.
func (z Zone) Set(s string) error {
	loc, err := ParseZone(s)
	if err != nil {
		return err
	}
	*z.P = loc
	return nil
}

// ParseZone reads a --tz value (or HANDOFF_TZ): nil for "", time.Local for
// "local", else the IANA zone.
func ParseZone(s string) (*time.Location, error) {
	switch s = strings.TrimSpace(s); {
	case s == "":
		return nil, nil
	case strings.EqualFold(s, "local"):
		return time.Local, nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: want an IANA name such as Asia/Shanghai, UTC, or local (this machine's zone)", s)
	}
	return loc, nil
}
