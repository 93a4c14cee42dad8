// tcp_bound: the raw loopback TCP bound of bench/tcp_collective_bench: WORLD forked processes
// joined by a full mesh of TCP connections on 127.0.0.1 (TCP_NODELAY, default kernel buffers)
// move exactly the bytes a collective's schedule moves, with no framing, no checksum and no
// arithmetic. Waits spin on non-blocking send/recv, calling sched_yield() between tries (so that the
// other ranks run when WORLD exceeds the cores), for up to 2 ms, then block in poll(). For every op and size it
// runs each schedule below and reports the fastest (its name in the comment after the figures):
//   all_reduce      ring: 2(n-1) steps of S/n to the next rank; direct: S to every rank at once;
//                   pairwise: S/n to every rank, twice (reduce-scatter then all-gather)
//   all_gather      ring: n-1 steps of S/n; direct: S/n to every rank at once (S = output)
//   reduce_scatter  the same moves as all_gather (S = input)
//   broadcast       direct: root sends S to every rank; scatter + ring all-gather (van de Geijn)
// A step ends when this rank has sent and received everything of it (a real ring needs the data
// it receives before its next send). Protocol of tcp_collective_bench: barrier (one byte to and
// from every rank), then one timed schedule; an iteration's time is the max over ranks; median
// over iterations.
//
// Build: gcc -O2 bench/peers/tcp_bound.c -o tcp_bound
// Run:   ./tcp_bound WORLD OPS SIZES [ITER_DIV]    (OPS, SIZES, ITER_DIV as collectives_mpi.c)
// Output: "# ...", "# half-RTT 8 B: <us> us" (ranks 0 and 1 ping-pong), then per op and size
//   "R <op> <bytes> <iters> <median_us> <min_us> # <schedule>".
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const double kSpinSeconds = 2e-3;
enum { kMaxWorld = 16, kMaxIters = 400, kMaxSizes = 32, kMaxMoves = 2 * kMaxWorld };

static int world, rank_;
static int fds[kMaxWorld];  // fds[peer]: this rank's connection to peer
static char *sendbuf, *recvbuf;
static double* shared_times;  // [world][kMaxIters], shared by the forked ranks

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

static int iters_for(size_t bytes, int div) {
  int n = bytes <= (16u << 10) ? 400 : bytes <= (256u << 10) ? 200 : bytes <= (4u << 20) ? 50
          : bytes <= (16u << 20) ? 15 : 8;
  n /= div > 0 ? div : 1;
  return n < 3 ? 3 : n;
}

struct move {
  int fd;
  char* p;
  size_t left;
};

// Sends and receives everything of one step, spinning (and yielding) 2 ms, then in poll().
static void step(struct move* sends, int ns, struct move* recvs, int nr) {
  double idle_since = 0;
  for (;;) {
    int pending = 0, progressed = 0;
    struct pollfd pfd[kMaxMoves];
    int np = 0;
    for (int i = 0; i < ns; ++i) {
      if (sends[i].left == 0) continue;
      ssize_t k = send(sends[i].fd, sends[i].p, sends[i].left, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) {
        sends[i].p += k;
        sends[i].left -= (size_t)k;
        progressed = 1;
      } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        perror("tcp_bound: send");
        _exit(1);
      }
      if (sends[i].left != 0) {
        pfd[np++] = (struct pollfd){.fd = sends[i].fd, .events = POLLOUT};
        ++pending;
      }
    }
    for (int i = 0; i < nr; ++i) {
      if (recvs[i].left == 0) continue;
      ssize_t k = recv(recvs[i].fd, recvs[i].p, recvs[i].left, MSG_DONTWAIT);
      if (k > 0) {
        recvs[i].p += k;
        recvs[i].left -= (size_t)k;
        progressed = 1;
      } else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        fprintf(stderr, "tcp_bound: rank %d: recv failed\n", rank_);
        _exit(1);
      }
      if (recvs[i].left != 0) {
        pfd[np++] = (struct pollfd){.fd = recvs[i].fd, .events = POLLIN};
        ++pending;
      }
    }
    if (pending == 0) return;
    if (progressed) {
      idle_since = 0;
    } else if (idle_since == 0) {
      idle_since = now();
    } else if (now() - idle_since > kSpinSeconds) {
      poll(pfd, (nfds_t)np, 1000);
      idle_since = 0;
    } else {
      sched_yield();  // lets another rank of an oversubscribed machine run
    }
  }
}

static void barrier(void) {
  static char out[kMaxWorld], in[kMaxWorld];
  struct move s[kMaxWorld], r[kMaxWorld];
  int n = 0;
  for (int p = 0; p < world; ++p) {
    if (p == rank_) continue;
    s[n] = (struct move){fds[p], &out[p], 1};
    r[n] = (struct move){fds[p], &in[p], 1};
    ++n;
  }
  step(s, n, r, n);
}

// Every rank sends `bytes` to every other rank (from `from` only when from >= 0: the others only
// receive from it) and receives the same.
static void exchange(size_t bytes, int from) {
  struct move s[kMaxWorld], r[kMaxWorld];
  int ns = 0, nr = 0;
  for (int p = 0; p < world; ++p) {
    if (p == rank_) continue;
    if (from < 0 || from == rank_) s[ns++] = (struct move){fds[p], sendbuf + (size_t)p * bytes, bytes};
    if (from < 0 || from == p) r[nr++] = (struct move){fds[p], recvbuf + (size_t)p * bytes, bytes};
  }
  step(s, ns, r, nr);
}

static void ring(size_t chunk, int steps) {
  const int next = (rank_ + 1) % world, prev = (rank_ + world - 1) % world;
  for (int k = 0; k < steps; ++k) {
    struct move s = {fds[next], sendbuf + (size_t)(k % world) * chunk, chunk};
    struct move r = {fds[prev], recvbuf + (size_t)(k % world) * chunk, chunk};
    step(&s, 1, &r, 1);
  }
}

// Runs schedule `which` of `op` on `bytes`; returns 0 when the op has no such schedule.
static int schedule(const char* op, int which, size_t bytes) {
  const size_t block = bytes / (size_t)world;
  const int n = world;
  if (!strcmp(op, "all_reduce")) {
    if (which == 0) ring(block, 2 * (n - 1));
    else if (which == 1) exchange(bytes, -1);
    else if (which == 2) { exchange(block, -1); exchange(block, -1); }
    else return 0;
  } else if (!strcmp(op, "all_gather") || !strcmp(op, "reduce_scatter")) {
    if (which == 0) ring(block, n - 1);
    else if (which == 1) exchange(block, -1);
    else return 0;
  } else {  // broadcast
    if (which == 0) exchange(bytes, 0);
    else if (which == 1) { exchange(block, 0); ring(block, n - 1); }
    else return 0;
  }
  return 1;
}

static const char* schedule_name(const char* op, int which) {
  if (!strcmp(op, "broadcast")) return which == 0 ? "direct" : "scatter+ring";
  return which == 0 ? "ring" : which == 1 ? "direct" : "pairwise";
}

static void rank_main(char* ops, const size_t* sizes, int nsizes, int div) {
  // Half round trip of 8 bytes between ranks 0 and 1 (the others wait at the barrier).
  barrier();
  if (rank_ < 2) {
    double t[2000];
    char b[8] = {0};
    const int peer = 1 - rank_;
    for (int i = -100; i < 2000; ++i) {
      const double t0 = now();
      struct move m = {fds[peer], b, 8};
      if (rank_ == 0) { step(&m, 1, NULL, 0); m = (struct move){fds[peer], b, 8}; step(NULL, 0, &m, 1); }
      else { step(NULL, 0, &m, 1); m = (struct move){fds[peer], b, 8}; step(&m, 1, NULL, 0); }
      if (i >= 0) t[i] = (now() - t0) / 2;
    }
    qsort(t, 2000, sizeof(double), by_value);
    if (rank_ == 0) printf("# half-RTT 8 B: %.2f us (median of 2000)\n", t[1000] * 1e6);
  }
  barrier();
  char* save = NULL;
  for (char* op = strtok_r(ops, ",", &save); op != NULL; op = strtok_r(NULL, ",", &save)) {
    for (int s = 0; s < nsizes; ++s) {
      const int iters = iters_for(sizes[s], div);
      const int warmup = iters / 8 > 2 ? iters / 8 : 2;
      double best = 0, best_min = 0;
      int best_which = -1;
      for (int which = 0; which < 3; ++which) {
        barrier();
        if (!schedule(op, which, sizes[s])) break;  // all ranks agree: same op, same schedule
        for (int it = -warmup; it < iters; ++it) {
          barrier();
          const double t0 = now();
          schedule(op, which, sizes[s]);
          if (it >= 0) shared_times[rank_ * kMaxIters + it] = now() - t0;
        }
        barrier();
        if (rank_ == 0) {
          double slowest[kMaxIters];
          for (int it = 0; it < iters; ++it) {
            slowest[it] = 0;
            for (int r = 0; r < world; ++r)
              if (shared_times[r * kMaxIters + it] > slowest[it]) slowest[it] = shared_times[r * kMaxIters + it];
          }
          qsort(slowest, (size_t)iters, sizeof(double), by_value);
          if (best_which < 0 || slowest[iters / 2] < best) {
            best = slowest[iters / 2];
            best_min = slowest[0];
            best_which = which;
          }
        }
        barrier();  // rank 0 has read the times before they are overwritten
      }
      if (rank_ == 0) {
        printf("R %s %zu %d %.2f %.2f # %s\n", op, sizes[s], iters, best * 1e6, best_min * 1e6,
               schedule_name(op, best_which));
        fflush(stdout);
      }
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: tcp_bound WORLD OPS SIZES [ITER_DIV]\n");
    return 2;
  }
  world = atoi(argv[1]);
  const int div = argc > 4 ? atoi(argv[4]) : 1;
  size_t sizes[kMaxSizes], max_bytes = 0;
  int nsizes = 0;
  for (char* s = strtok(argv[3], ","); s != NULL && nsizes < kMaxSizes; s = strtok(NULL, ",")) {
    sizes[nsizes] = (size_t)strtoull(s, NULL, 10);
    if (sizes[nsizes] > max_bytes) max_bytes = sizes[nsizes];
    ++nsizes;
  }
  if (world < 2 || world > kMaxWorld || nsizes == 0) {
    fprintf(stderr, "tcp_bound: expected 2 <= WORLD <= %d and sizes, got %s\n", kMaxWorld, argv[1]);
    return 2;
  }
  // The mesh, made here and inherited: conn[i][j] is i's end of the i-j connection.
  static int conn[kMaxWorld][kMaxWorld];
  const int one = 1;
  for (int i = 0; i < world; ++i) {
    for (int j = i + 1; j < world; ++j) {
      int ls = socket(AF_INET, SOCK_STREAM, 0);
      struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t al = sizeof a;
      if (bind(ls, (struct sockaddr*)&a, sizeof a) || listen(ls, 1) ||
          getsockname(ls, (struct sockaddr*)&a, &al)) {
        perror("tcp_bound: listen");
        return 1;
      }
      int c = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(c, (struct sockaddr*)&a, sizeof a)) {
        perror("tcp_bound: connect");
        return 1;
      }
      int s = accept(ls, NULL, NULL);
      close(ls);
      setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      conn[i][j] = c;
      conn[j][i] = s;
    }
  }
  shared_times = mmap(NULL, sizeof(double) * kMaxWorld * kMaxIters, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared_times == MAP_FAILED) {
    perror("tcp_bound: mmap");
    return 1;
  }
  printf("# raw TCP loopback schedules, %d processes, TCP_NODELAY, spin+yield 2 ms then poll\n", world);
  fflush(stdout);
  pid_t kids[kMaxWorld];
  for (int r = 0; r < world; ++r) {
    kids[r] = fork();
    if (kids[r] == 0) {
      rank_ = r;
      for (int p = 0; p < world; ++p) {
        fds[p] = p == r ? -1 : conn[r][p];
        for (int q = 0; q < world; ++q)
          if (p != r && q != p) close(conn[p][q]);
      }
      sendbuf = malloc(max_bytes * (size_t)world);
      recvbuf = malloc(max_bytes * (size_t)world);
      if (sendbuf == NULL || recvbuf == NULL) _exit(1);
      memset(sendbuf, 1, max_bytes * (size_t)world);
      memset(recvbuf, 0, max_bytes * (size_t)world);
      rank_main(argv[2], sizes, nsizes, div);
      fflush(stdout);
      _exit(0);
    }
  }
  int bad = 0;
  for (int r = 0; r < world; ++r) {
    int st = 0;
    waitpid(kids[r], &st, 0);
    bad |= !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  if (bad) fprintf(stderr, "tcp_bound: a rank failed (world %d)\n", world);
  return bad;
}
