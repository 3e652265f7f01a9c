package lease

import (
	"strings"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/templates"
)

// A manager serves one or more engines, each from a fleet of its own
// (Config.Fleet, the default, and Config.Fleets): a template is built on,
// and its databases cloned on, servers of the engine its request names.

// fleetFor returns the fleet of the engine a request names (see
// templates.EngineMatches); "" is the default fleet.
func (m *Manager) fleetFor(engine string) (*instance.Fleet, error) {
	if engine == "" {
		return m.fleet, nil
	}
	for _, f := range m.fleets {
		if templates.EngineMatches(engine, f.Provider().Engine()) {
			return f, nil
		}
	}
	names := make([]string, len(m.fleets))
	for i, f := range m.fleets {
		names[i] = templates.EngineName(f.Provider().Engine())
	}
	return nil, testdbd.Errorf(testdbd.EInvalid,
		"engine %q was asked for, but this daemon serves %s: ask for one of those (or leave engine empty for %s), or start the daemon with an image of that engine (--image, once per engine)",
		engine, strings.Join(names, ", "), names[0])
}

// Engines lists the engines the manager serves, the default first.
func (m *Manager) Engines() []testdbd.Engine {
	out := make([]testdbd.Engine, len(m.fleets))
	for i, f := range m.fleets {
		out[i] = f.Provider().Engine()
	}
	return out
}

// members returns the running servers of every fleet.
func (m *Manager) members() []*instance.Member {
	var all []*instance.Member
	for _, f := range m.fleets {
		all = append(all, f.Members()...)
	}
	return all
}
