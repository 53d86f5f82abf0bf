"""`sim`: thin commands over the library. Each parses, calls one library function, prints.

Errors a user can cause (a bad scenario file, a refused size) print one line
and exit non-zero; no traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from sim.cli.progress import Batch, FilesWritten, SimulatedTime
from sim.processes.allocator import keep_freed_memory
from sim.processes.process_exit import exit_without_collecting

if TYPE_CHECKING:
    from sim.api.limits import RateLimit

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report an interrupted command
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as shells report a command whose reader left
#: seconds from SIGTERM within which `sim serve` exits: the drain of the requests being
#: handled, then the last snapshot (waited for what is left of this, then given up: the next
#: start replays instead), then the state file closed
STOP_WITHIN_S = 2.0
#: ... of which the state file's close and the interpreter's exit take at most about this
STOP_CLOSE_S = 0.3


def _fail(message: str) -> int:
    print(f"sim: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _run_failure(args: argparse.Namespace, err: Exception) -> int:
    """A run the control plane refused, or a dask scheduler that did not answer."""
    from sim.scenario.runner import ScenarioRunError

    if isinstance(err, ScenarioRunError):
        return _fail(f"{args.file}: {err}")
    if args.scheduler is None:
        raise err
    return _fail(f"dask scheduler {args.scheduler}: {err}")


# -- commands -------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a scenario file; print what it declares."""
    from sim.scenario.durations import readable_duration
    from sim.scenario.loader import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.file)
    except ScenarioError as err:
        return _fail(str(err))
    print(f"{args.file}: ok: scenario {scenario.name!r}, {scenario.project_count()} projects, "
          f"{scenario.compute_count()} computes, {readable_duration(scenario.duration)} simulated")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run a scenario; write Parquet tables, summary, charts and report.html to --out."""
    # the workers' modules load beside the checks of the file
    with _fork_server(args.workers is not None and args.workers > 0 and not args.scheduler):
        return _run(args)


def _fork_server(embedded: bool) -> AbstractContextManager[object]:
    """For a command that starts the embedded cluster: the fork server its workers come
    from, started now and stopped (with the workers it reaped) when the command is done."""
    if not embedded:
        return nullcontext()
    from sim.processes.fork_server import own_fork_server

    return own_fork_server()


def _run(args: argparse.Namespace) -> int:
    from sim.metrics.results_dir import ResultsExist, check_target, discard, publish, staging_dir, write_run
    from sim.scenario.loader import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.file)
    except ScenarioError as err:
        return _fail(str(err))
    out = Path(args.out) if args.out else Path("results") / scenario.name
    if args.workers is not None and args.workers < 1:
        return _fail("--workers must be >= 1")
    try:
        check_target(out, replace=args.force)  # before the run, not after it
    except ResultsExist as err:
        return _fail(str(err))
    from sim.processes.cluster import started_client  # the workers boot while the modules below load

    cluster = started_client(args.workers, args.scheduler) if args.workers or args.scheduler \
        else None
    from sim.metrics import summary_table
    from sim.scenario.runner import ScenarioRunError
    from sim.sweep.fleet import run_fleet

    staging = None
    try:
        started = time.perf_counter()
        try:
            shown = SimulatedTime(args.quiet, f"simulating {scenario.name}")
            with shown as update, closing(cluster) if cluster is not None else nullcontext():
                if cluster is None:  # on a cluster, the workers have their own
                    from sim.kernel.kernel_ahead import compile_ahead

                    compile_ahead(shown.compiling)
                result = run_fleet(args.file, seed=args.seed, cluster=cluster, progress=update)
        except (ScenarioRunError, OSError, TimeoutError) as err:
            return _run_failure(args, err)
        simulated = time.perf_counter() - started
        started = time.perf_counter()
        staging = staging_dir(out, replace=args.force)
        with FilesWritten(args.quiet, "writing results") as update:
            written = write_run(result, scenario, Path(args.file), staging, progress=update)
        publish(staging, out)  # from here on `staging` no longer exists
        writing = time.perf_counter() - started
    except ResultsExist as err:
        return _fail(str(err))
    except OSError as err:  # a full disk, a directory we may not write
        if staging is not None:
            discard(staging)
        return _fail(f"{out}: cannot write the results ({err.strerror or err}); "
                     f"{out} left as it was")
    except KeyboardInterrupt:
        if staging is not None and not staging.exists():  # already moved into place
            print(f"sim: interrupted; the results were complete and are in {out}/",
                  file=sys.stderr)
            return EXIT_INTERRUPTED
        if staging is not None:
            discard(staging)
        print(f"sim: interrupted; {out} left as it was", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BaseException:
        if staging is not None:
            discard(staging)
        raise
    from sim.cli.run_text import days, roads_line

    print(summary_table(written.summary))
    print(f"\n{roads_line(result.roads)}")
    print(f"simulated {days(result.duration_s)} in {simulated:.1f} s; results written in "
          f"{writing:.1f} s to {out}/ ({len(written.charts)} charts, {written.report.name})")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """Redraw a run's charts and report.html from the results saved in OUT_DIR."""
    from sim.metrics import draw_charts, read_results
    from sim.metrics.io import missing_results
    from sim.metrics.report import write_report

    out = Path(args.dir)
    missing = missing_results(out)
    if missing:
        what = (f"{missing[0]} is missing" if len(missing) == 1 else
                f"{len(missing)} files are missing: {', '.join(missing)}")
        return _fail(f"{out}: no saved results here ({what}); write them with: "
                     f"sim run FILE --out {out}")
    tables, totals = read_results(out)
    charts = draw_charts(tables, totals, out)
    report = write_report(out, summary=totals)
    print(f"{out}/: {len(charts)} charts and {report.name} redrawn")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a grid of overrides of a scenario, R seeds per point, on dask.distributed."""
    from sim.scenario.loader import ScenarioError
    from sim.scenario.runner import ScenarioRunError
    from sim.sweep import SweepError, parse_setting, points_table, run_sweep, write_sweep

    if args.workers is not None and args.workers < 0:
        return _fail("--workers must be >= 0 (0: run in this process)")
    started = time.perf_counter()
    try:
        settings = [parse_setting(text) for text in args.set]
        with _fork_server(args.scheduler is None and args.workers != 0), \
                Batch(args.quiet, "sweep") as update:
            result = run_sweep(args.file, settings, replications=args.replications,
                           workers=args.workers, scheduler=args.scheduler, progress=update)
    except (ScenarioError, SweepError) as err:
        return _fail(str(err))
    except (ScenarioRunError, OSError, TimeoutError) as err:
        return _run_failure(args, err)
    out = Path(args.out) if args.out else Path("results") / f"{result.name}-sweep"
    paths = write_sweep(result, out)
    print(points_table(result))
    charts = sum(1 for p in paths.values() if p.suffix == ".png")
    print(f"\n{len(result.runs)} runs ({len(result.points)} points x {result.replications}) "
          f"in {time.perf_counter() - started:.1f} s; results in {out}/ "
          f"(runs.parquet, points.parquet, template_points.parquet, {charts} charts)")
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    """The cheapest settings per template that meet the --slo targets, confirmed by simulation."""
    from sim.recommendation import RecommendError, recommend, write_recommendation
    from sim.recommendation.output import recommendation_tables
    from sim.recommendation.targets import as_targets
    from sim.scenario.loader import ScenarioError
    from sim.scenario.runner import ScenarioRunError

    if args.workers is not None and args.workers < 0:
        return _fail("--workers must be >= 0 (0: run in this process)")
    started = time.perf_counter()
    try:
        targets = as_targets(args.slo)  # refused before the progress bar shows
        with _fork_server(args.scheduler is None and args.workers != 0), \
                Batch(args.quiet, "recommend") as update:
            rec = recommend(args.file, targets, args.space or (),
                            replications=args.replications, workers=args.workers,
                            scheduler=args.scheduler, progress=update)
    except (ScenarioError, RecommendError) as err:
        return _fail(str(err))
    except (ScenarioRunError, OSError, TimeoutError) as err:
        return _run_failure(args, err)
    out = Path(args.out) if args.out else Path("results") / f"{rec.name}-recommend"
    paths = write_recommendation(rec, out)
    print(recommendation_tables(rec))
    print(f"{time.perf_counter() - started:.1f} s; results in {out}/ ({paths['json'].name}, "
          f"{paths['chart'].name}, {paths['report'].name}); recommended scenario: "
          f"{paths['scenario']}")
    return 0 if rec.met else 1


def cmd_limits(args: argparse.Namespace) -> int:
    """Print the size table: CU, vCPU, RAM, max_connections, Local File Cache, temp disk."""
    from sim.rules.connections import max_connections_fixed
    from sim.rules.sizes import VALID_CU, is_shared, lfc_gb, ram_gb, temp_disk_gib, vcpu

    header = f"{'CU':>6} {'vCPU':>6} {'RAM GB':>7} {'max_conn':>9} {'LFC GB':>7} {'temp GiB':>9}"
    print(header)
    print("-" * len(header))
    for cu in VALID_CU:
        shared = " shared" if is_shared(cu) else ""
        print(f"{cu:>6g} {vcpu(cu):>6g} {ram_gb(cu):>7g} {max_connections_fixed(cu):>9} "
              f"{lfc_gb(cu):>7g} {temp_disk_gib(cu):>9g}{shared}")
    print("\nautoscaling: 0.25 to 16 CU (min <= max); above 16 CU fixed sizes only; "
          "free plan: up to 2 CU")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the management API over simulated time (console at /, OpenAPI at /docs)."""
    from sim.api.limits import RateLimit

    # options, then the port, before anything is printed or created (no banner, no key)
    if args.speed <= 0:
        return _fail("--speed must be > 0")
    try:
        rate_limit = RateLimit.parse(args.rate_limit)
    except ValueError as err:
        return _fail(f"--rate-limit: {err}")
    if args.max_body_bytes < 1:
        return _fail("--max-body-bytes must be >= 1")
    if args.body_timeout is not None and not args.body_timeout > 0:
        return _fail("--body-timeout must be > 0")
    if args.new and not args.state:
        return _fail("--new starts a state file over: give it with --state FILE")
    if not 1 <= args.port <= 65_535:
        return _fail(f"--port must be 1..65535, got {args.port}")
    if args.header_timeout is not None and not args.header_timeout > 0:
        return _fail("--header-timeout must be > 0")
    if args.snapshot_every is not None and args.snapshot_every < 1:
        return _fail("--snapshot-every must be >= 1")
    if not args.advance_step > 0:
        return _fail("--advance-step must be > 0 (simulated seconds)")
    from sim.api.serving import FD_RESERVE, default_max_connections

    most = default_max_connections()
    if args.max_connections is not None and not 1 <= args.max_connections <= most:
        return _fail(f"--max-connections must be 1..{most} (the descriptor limit, ulimit -n, "
                     f"less {FD_RESERVE} kept for the server itself)")
    from sim.api.start_key import StartKeyError, given_key

    try:
        given = given_key(args.api_key, args.api_key_file)
    except StartKeyError as err:
        return _fail(str(err))
    try:
        listener = _listen(args.host, args.port)
    except OSError as err:
        return _fail(f"--port {args.port}: cannot listen on {args.host}:{args.port} "
                     f"({err.strerror or err})")
    try:
        return _serve(args, listener, rate_limit, given)
    finally:
        listener.close()


def _listen(host: str, port: int) -> socket.socket:
    """Bind the server's socket now, so a taken port is refused before anything is printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, as uvicorn's own bind does: asyncio sets TCP_NODELAY only on
    # sockets that say so (sim.api.serving sets it on each connection as well)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by connections
        # bound, not yet listening: clients are refused (not queued) until the server
        # is ready, which may take a while when a state file is replayed
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _serve(args: argparse.Namespace, listener: socket.socket, rate_limit: RateLimit,
           given: tuple[str | None, str | None]) -> int:
    from sim.api import SimServer, create_app

    scenario = None
    #: what building a scenario's fleet may refuse (nothing to build, nothing to import:
    #: the runner loads the kernel)
    build_refused: tuple[type[Exception], ...] = ()
    if args.scenario:
        from sim.scenario.loader import ScenarioError, load_scenario
        from sim.scenario.runner import ScenarioRunError

        build_refused = (ScenarioRunError,)
        try:
            scenario = load_scenario(args.scenario)
        except ScenarioError as err:
            return _fail(str(err))

    limits = {"rate_limit": rate_limit, "max_body_bytes": args.max_body_bytes,
              "kernel": False if args.engine_only else None,
              "advance_step_s": args.advance_step}
    restored = None
    try:
        if args.state:
            from sim.api.restore import open_server
            from sim.api.state_file import StateError, start_over

            if args.new:
                for moved in start_over(Path(args.state)):
                    print(f"state: kept the old file aside as {moved.name}")
            try:
                server, restored = open_server(args.state, seed=args.seed, clock=args.clock,
                                               speed=args.speed, scenario_path=args.scenario,
                                               snapshot_every=args.snapshot_every, **limits)
            except StateError as err:  # the file's, or its scenario's (one line)
                return _fail(str(err))
        else:
            server = SimServer(seed=args.seed, clock=args.clock, speed=args.speed,
                               scenario=scenario, **limits)
    except build_refused as err:
        return _fail(f"{args.scenario}: {err}")
    server.body_timeout_s = args.body_timeout
    from sim.api.start_key import StartKeyError, settle

    try:
        key_lines = settle(server, *given, args.state)
    except StartKeyError as err:
        server.close_state()
        return _fail(str(err))
    base = f"http://{args.host}:{args.port}"
    held = restored.held if restored is not None else None
    clock = ("manual (POST /_sim/advance)" if args.clock == "manual" else
             f"realtime x{args.speed:g}")
    if held is not None:
        clock = "held: the state file is served read only"
    print(f"sim serve: {base}/api/v2/  (clock: {clock}, seed {server.seed})")
    print(f"limits: {rate_limit or 'no rate limit'}; bodies up to {args.max_body_bytes} bytes")
    if args.clock == "realtime":
        from sim.api.realtime_check import realtime_warning

        warning = realtime_warning(server)
        if warning is not None:
            print(warning)
    if restored is not None:
        if restored.created:
            what = "new state file"
        else:
            start = (f"snapshot after row {restored.snapshot_after} + "
                     if restored.snapshot_after else "")
            what = (f"{start}{restored.requests} requests ({restored.entries} journal entries) "
                    f"replayed in {restored.seconds:.2f} s; simulated now {server.cp.now:g} s")
        print(f"state: {args.state} ({what})")
        if held is not None:
            print(f"state: HELD READ ONLY: {held.line()}; writes answer 503 STATE_FILE_HELD "
                  f"(docs/reliability.md: a file a restart cannot replay to its end)")
    for line in key_lines:
        print(line)
    print(f"console: {base}/#key=<API key>   OpenAPI: {base}/docs")
    sys.stdout.flush()
    stop_asked: list[float] = []

    def on_stop() -> None:
        stop_asked.append(time.monotonic())
        server.stop_waiting()

    try:
        from sim.api.serving import run

        run(create_app(server), listener, log_level=args.log_level,
            header_timeout=args.header_timeout, max_connections=args.max_connections,
            on_stop=on_stop)
    finally:
        # drain is over: snapshot (given up when the stop's time is: the journal has it
        # all), commit, fold the -wal in, close
        spent = time.monotonic() - stop_asked[0] if stop_asked else 0.0
        server.close_state(wait_s=max(0.0, STOP_WITHIN_S - STOP_CLOSE_S - spent))
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    """List or revoke the API keys of a state file (the server must be stopped)."""
    from sim.api.state_file import StateError, list_keys, revoke_key

    if args.action == "revoke" and args.key_id is None:
        return _fail(f"keys revoke: give the id of the key (see: sim keys list --state "
                     f"{args.state})")
    try:
        if args.action == "revoke":
            record = revoke_key(args.state, args.key_id)
            print(f"revoked key {record.id} ({record.name}); refused from now on")
            return 0
        records = list_keys(args.state)
    except StateError as err:
        hint = ("; while it runs, use GET / DELETE /api/v2/api_keys" if "in use" in str(err)
                else "")
        return _fail(f"{err}{hint}")
    print(f"{'id':>4}  {'kind':<12} {'name':<24} {'created_at':<28} state")
    for r in records:
        print(f"{r.id:>4}  {r.kind.value:<12} {r.name[:24]:<24} {r.created_at or '-':<28} "
              f"{'revoked' if r.revoked else 'accepted'}")
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "run": (cmd_run, "run a scenario file and write results, summary and charts"),
    "validate": (cmd_validate, "check a scenario file without running it"),
    "plot": (cmd_plot, "redraw a run's charts and report.html from its saved results"),
    "sweep": (cmd_sweep, "run a grid of scenario overrides with several seeds on dask"),
    "recommend": (cmd_recommend, "find the cheapest settings per template that meet service-level "
                                 "targets (theory, then simulation with confidence intervals)"),
    "limits": (cmd_limits, "print the size table (CU, vCPU, RAM, max_connections, ...)"),
    "serve": (cmd_serve, "serve the management API over simulated time (console at /)"),
    "keys": (cmd_keys, "list or revoke the API keys kept in a state file of sim serve"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sim", description="Discrete-event simulator of a serverless-Postgres control plane.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help=COMMANDS["run"][1], description=COMMANDS["run"][1])
    run.add_argument("file", help="scenario YAML file")
    run.add_argument("--out", help="output directory (default: results/<scenario name>)")
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--force", action="store_true",
                     help="replace an existing, non-empty output directory whole (without "
                          "it such a directory is refused and left alone). Results are "
                          "written beside it and moved into place only when complete: an "
                          "interrupted run (Ctrl-C) leaves the directory as it was")
    run.add_argument("--workers", type=int, metavar="N",
                     help="split the fleet by project across N dask worker processes "
                          "(an embedded LocalCluster); results equal a single-process run")
    run.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                     help="split the fleet across the workers of this dask cluster")
    plot = sub.add_parser("plot", help=COMMANDS["plot"][1], description=COMMANDS["plot"][1])
    plot.add_argument("dir", metavar="OUT_DIR", help="a directory written by sim run")
    sweep = sub.add_parser("sweep", help=COMMANDS["sweep"][1], description=COMMANDS["sweep"][1],
                           epilog="PATH examples: computes.suspend_timeout_seconds (every "
                                  "compute), projects[0].branches[0].computes[0].size.cu, "
                                  "engine.pool_share, projects.count; TEMPLATE.KEY as in "
                                  "recommend --space (hobby.suspend_timeout_seconds=300,3600, "
                                  "busy.cu=1,2, busy.autoscaling=0.25-4, busy.pooler=on,off)")
    sweep.add_argument("file", help="scenario YAML file")
    sweep.add_argument("--set", action="append", required=True, metavar="PATH=V1,V2,...",
                       help="values of one scenario key; repeat for a grid")
    sweep.add_argument("--replications", type=int, default=1, metavar="R",
                       help="runs per grid point, with seeds derived from the scenario's "
                            "(default 1: no confidence intervals)")
    sweep.add_argument("--out", help="output directory (default: results/<name>-sweep)")
    sweep.add_argument("--workers", type=int, metavar="N",
                       help="worker processes of the embedded dask cluster (default: one per "
                            "CPU; 0: run in this process)")
    sweep.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="send the runs to this dask cluster instead")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    rec = sub.add_parser(
        "recommend", help=COMMANDS["recommend"][1], description=COMMANDS["recommend"][1],
        epilog="targets: cold_starts_per_1000=N, cold_start_share=P%, wake_p99=S, refused=P%, "
               "queue_wait_p99=S. space: [TEMPLATE.]KEY=V1,V2 with KEY suspend_timeout_seconds "
               "(never = -1), cu, autoscaling (MIN-MAX), pooler_enabled. Exit status 1 when "
               "some template has no setting that meets every target.")
    rec.add_argument("file", help="scenario YAML file (its settings are the ones run today)")
    rec.add_argument("--slo", action="append", required=True, metavar="NAME=LIMIT",
                     help="a service-level target (an upper bound); repeat for several")
    rec.add_argument("--space", action="append", metavar="[TEMPLATE.]KEY=V1,V2,...",
                     help="the values one setting may take (default: timeouts 60 s to never, "
                          "sizes the plan allows around today's, pooler off and on)")
    rec.add_argument("--replications", type=int, default=5, metavar="R",
                     help="runs per candidate setting, for 95%% intervals (default 5)")
    rec.add_argument("--out", help="output directory (default: results/<name>-recommend)")
    rec.add_argument("--workers", type=int, metavar="N",
                     help="worker processes of the embedded dask cluster (default: one per "
                          "CPU; 0: run in this process)")
    rec.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                     help="send the runs to this dask cluster instead")
    rec.add_argument("--quiet", action="store_true", help="no progress bar")
    val = sub.add_parser("validate", help=COMMANDS["validate"][1],
                         description=COMMANDS["validate"][1])
    val.add_argument("file", help="scenario YAML file")
    sub.add_parser("limits", help=COMMANDS["limits"][1], description=COMMANDS["limits"][1])
    serve = sub.add_parser("serve", help=COMMANDS["serve"][1], description=COMMANDS["serve"][1])
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--api-key", help="accept this personal API key; it replaces the key "
                                         "given at the previous start of the --state file "
                                         "(default: $SIM_API_KEY, else generate one and print "
                                         "it once)")
    serve.add_argument("--api-key-file", metavar="PATH",
                       help="read the key from this file (one line): not in the process list")
    serve.add_argument("--scenario", help="start with this scenario's fleet and run its workload")
    serve.add_argument("--clock", choices=("manual", "realtime"), default="manual",
                       help="manual: time moves by POST /_sim/advance; realtime: it runs "
                            "at --speed x wall time")
    serve.add_argument("--speed", type=float, default=1.0,
                       help="realtime clock: simulated seconds per wall second")
    serve.add_argument("--seed", type=int, help="random seed (default: the scenario's, or 0)")
    serve.add_argument("--state", metavar="FILE",
                       help="keep the world in this SQLite file: every acknowledged change is "
                            "committed before the answer, and a restart replays it")
    serve.add_argument("--rate-limit", default="700,40", metavar="PER_MIN[,BURST]|off",
                       help="requests a minute per API key, and a second per route "
                            "(default 700,40, as the real API); off: no limit")
    serve.add_argument("--max-body-bytes", type=int, default=1 << 20, metavar="N",
                       help="refuse larger request bodies with 413 (default 1 MiB)")
    serve.add_argument("--log-level", choices=("warning", "info", "debug"), default="warning",
                       help="what the server logs, on stderr (default warning)")
    serve.add_argument("--new", action="store_true",
                       help="start the --state file over: the old one and its companions are "
                            "moved aside (FILE.old-<time>), never deleted")
    serve.add_argument("--body-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="a request body must arrive whole within this time, else 408 "
                            "(default 10)")
    serve.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="a request head must arrive whole within this time, else 408 and "
                            "the connection is closed (default 10)")
    serve.add_argument("--max-connections", type=int, metavar="N",
                       help="connections held at once; one more gets 503 (default: the "
                            "descriptor limit less 64)")
    serve.add_argument("--advance-step", type=float, default=86_400.0, metavar="SECONDS",
                       help="an advance moves the clock this many simulated seconds at most "
                            "between two looks at the waiting requests (default a day)")
    serve.add_argument("--engine-only", action="store_true",
                       help="run every compute in the SimPy engine, not the compute kernel "
                            "(slower; the kernel's oracle)")
    serve.add_argument("--snapshot-every", type=int, default=500, metavar="ROWS",
                       help="--state: journal rows between snapshots; a restart after a crash "
                            "replays at most this many (default 500)")
    keys = sub.add_parser("keys", help=COMMANDS["keys"][1], description=COMMANDS["keys"][1])
    keys.add_argument("action", choices=("list", "revoke"), help="list, or revoke one key")
    keys.add_argument("key_id", nargs="?", type=int, help="revoke: the id of the key (see list)")
    keys.add_argument("--state", required=True, metavar="FILE", help="the state file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    exit_without_collecting()
    keep_freed_memory()
    handler, _ = COMMANDS[args.command]
    try:
        status = handler(args)
        sys.stdout.flush()  # here, where a closed pipe can be handled, not at exit
        return status
    except KeyboardInterrupt:
        print("sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of stdout left (`sim limits | head -3`): stop quietly, as a command killed
    by SIGPIPE does. stdout is pointed at /dev/null so that Python's last flush at exit
    finds no closed pipe either."""
    import os

    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
