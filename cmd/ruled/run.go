package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/config"
	"github.com/ruled-dev/ruled/host/daemon"
)

const runUsage = `Usage: ruled run --rules DIR --plugins DIR --data DIR [flags]
       ruled run --redis URL --data DIR [--shards N] [flags]   (rules and plugins from ruled deploy)

Runs the daemon: loads the plugins and rules, replays the steps that were
waiting when it last stopped, and serves events from the bus, the HTTP API
(POST /v1/events) and --events. SIGTERM or SIGINT stop it; durable steps
waiting then fire after the next start.

Flags:
`

// cpuProfile starts a CPU profile into path; stop ends and writes it.
func cpuProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("RULED_CPU_PROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("RULED_CPU_PROFILE: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// allocProfile writes the allocations since the start into path.
func allocProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "RULED_ALLOC_PROFILE: %v\n", err)
	}
}

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), runUsage); fs.PrintDefaults() }
	configFile := fs.String("config", os.Getenv("RULED_CONFIG"), "a YAML config file (the environment and flags given here override it; docs/config.md)")
	flags := config.Flags(fs) // every setting's flag, from the one table (config.Settings)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("run takes no arguments, got %q", pos))
	}
	// The file, then the environment, then the flags: the last said wins.
	var cfg daemon.Config
	config.Defaults(&cfg)
	// Every source's mistakes are named together: an operator mends them in
	// one round, not one a start.
	var errs []error
	if *configFile != "" {
		errs = append(errs, config.Load(*configFile, &cfg))
	}
	errs = append(errs, config.ApplyEnv(&cfg, os.Getenv), flags.Apply(&cfg))
	// What the settings say together (daemon.New checks it again: a
	// Config from elsewhere is checked too).
	errs = append(errs, cfg.Validate())
	if err := errors.Join(errs...); err != nil {
		return usageError(err.Error())
	}
	if cfg.MemoryLimitMB > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimitMB << 20)
	}
	// RULED_CPU_PROFILE=FILE writes a CPU profile of the whole run, for
	// go tool pprof: how a flow's time was spent, on the device itself.
	if path := os.Getenv("RULED_CPU_PROFILE"); path != "" {
		stop, err := cpuProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	// RULED_ALLOC_PROFILE=FILE writes, at the end of the run, what it
	// allocated (go tool pprof -sample_index=alloc_space): where the
	// garbage collector's work comes from.
	if path := os.Getenv("RULED_ALLOC_PROFILE"); path != "" {
		defer allocProfile(path, stderr)
	}
	switch cfg.EventsFile {
	case "":
	case "-":
		cfg.Events = stdin
	default:
		f, err := os.Open(cfg.EventsFile)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Events = f
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "ruled", Output: logOutput(stderr), Level: hclog.LevelFromString(cfg.LogLevel), JSONFormat: cfg.LogJSON})
	// SIGHUP reads the rules and plugins again (systemctl reload), and is
	// caught from here on: its default would end the process, silently,
	// as a clean exit systemd does not restart.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	d, err := daemon.New(cfg, log)
	if err != nil {
		return usageError(err.Error())
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	st := d.Status()
	n := notifyReady(ctx, d, readyStatus(len(st.Rules), len(st.Plugins)), log)
	for {
		select {
		case <-hup:
			log.Info("SIGHUP: reading the rules and plugins again")
			n.send("RELOADING=1")
			d.ReloadAll()
			n.send("READY=1")
			continue
		case <-ctx.Done():
		}
		break
	}
	n.stop() // the daemon's Stop says "stopping"
	stopped := make(chan error, 1)
	go func() { stopped <- d.Stop() }() // ends with Stop; the process exits after
	select {
	case err = <-stopped:
	case <-time.After(stopBound):
		// Something Stop waits for does not end (a store that does not
		// answer). What was accepted is in the store already: exit.
		return fmt.Errorf("did not stop within %v; exiting: accepted events and durable records stay for the next start", stopBound)
	}
	log.Info("stopped")
	return err
}

// stopBound is how long a SIGTERM waits for the daemon to stop: its drain
// (engine.StopDrain) and the closing of its parts, well under systemd's
// TimeoutStopSec (90 s by default).
const stopBound = 30 * time.Second
