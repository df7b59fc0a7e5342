import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT and SIGTERM, turned into a call: the first asks the running command to stop cleanly; a second
/// one, or one while nothing runs, exits with 130 at once. While `vfetch play` waits for its player,
/// they (and SIGHUP) go to the player instead.
///
/// The signal handler only writes a byte to a pipe (async-signal-safe) and a thread reading the pipe
/// does the rest, whichever thread the kernel interrupted. (libdispatch parks the main thread in
/// `sigsuspend` with every signal unblocked, so blocking them is not enough.)
enum Interrupts {
    private static let action = Mutex<(@Sendable () -> Void)?>(nil)

    static func start() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        interruptPipeWriteEnd.store(ends[1], ordering: .relaxed)
        handle(SIGINT)
        handle(SIGTERM)
        // A parent may have started us with them blocked (test runners, service managers do).
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        let reading = ends[0]
        Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(reading, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                // A signal while the player starts waits for its PID (`forward(to:)` sends it then).
                let player = forwardedTo.withLock { state -> pid_t? in
                    switch state {
                    case .none: return nil
                    case .starting: state = .starting(pending: Int32(byte))
                    case .running(let pid): kill(pid, Int32(byte))
                    }
                    return 0
                }
                if player != nil { continue }
                let pending = action.withLock { action in
                    defer { action = nil }
                    return action
                }
                guard let pending else { exit(130) }
                pending()
            }
        }.start()
    }

    /// What the next SIGINT or SIGTERM does; nil: exit at once.
    static func onInterrupt(_ handler: (@Sendable () -> Void)?) {
        action.withLock { $0 = handler }
    }

    /// From now on SIGINT, SIGTERM and SIGHUP go to `pid`, a player this process waits for, and this
    /// process ends as the player does: stopped by a service manager or a closed terminal, `vfetch play`
    /// leaves no player behind. (SIGHUP stays ignored under `nohup`.)
    static func forward(to pid: pid_t) {
        let pending = forwardedTo.withLock { state -> Int32? in
            defer { state = .running(pid) }
            if case .starting(let pending) = state { return pending }
            return nil
        }
        if let pending { kill(pid, pending) }
        var current = sigaction()
        guard sigaction(SIGHUP, nil, &current) == 0 else { return }
        let ignored = current.__sigaction_handler.sa_handler.map { unsafeBitCast($0, to: Int.self) } == unsafeBitCast(SIG_IGN, to: Int.self)
        if !ignored { handle(SIGHUP) }
    }

    /// Before a player is started: a SIGINT or SIGTERM from now on is kept for it (`forward(to:)`), not
    /// taken as this process's own, so a stop that comes as the player starts still stops the player.
    static func startingPlayer() {
        forwardedTo.withLock { $0 = .starting(pending: nil) }
    }

    /// The player did not start: signals are this process's own again.
    static func noPlayer() {
        forwardedTo.withLock { $0 = .none }
    }

    /// Sends `signal` to the pipe the reading thread watches.
    private static func handle(_ signal: Int32) {
        var handling = sigaction()
        handling.__sigaction_handler.sa_handler = { number in
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(interruptPipeWriteEnd.load(ordering: .relaxed), &byte, 1)
        }
        handling.sa_flags = SA_RESTART
        sigemptyset(&handling.sa_mask)
        sigaction(signal, &handling, nil)
    }
}

/// The player `vfetch play` waits for, which signals go to.
private enum Player {
    case none
    /// Being started; the last signal that came meanwhile.
    case starting(pending: Int32?)
    case running(pid_t)
}

private let forwardedTo = Mutex(Player.none)

/// Read by the signal handler, which may touch nothing but an atomic.
private let interruptPipeWriteEnd = Atomic<Int32>(-1)
