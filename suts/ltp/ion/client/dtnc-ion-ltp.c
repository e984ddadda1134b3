/*
 * dtnc-ion-ltp: one role of one LTP transfer on ION's LTP client API
 * (ltp.h), for dtnconform's endpoint contract (docs/implementers.md).
 *
 * It drives ION and reports what ION's notices said; it never decides an
 * outcome on its own.  Every setting comes from the environment:
 *
 *   DTNC_ROLE              sender | receiver
 *   DTNC_PEER_ENGINE       sender: the engine the block goes to
 *   DTNC_BLOCK_LEN         sender: bytes in the block
 *   DTNC_RED_LEN           sender: the first DTNC_RED_LEN bytes are red;
 *                          receiver: 0 means an all-green block (see below)
 *   DTNC_CLIENT_SERVICE_ID the client service (ION: 0..7)
 *   DTNC_LINGER_MS         stay registered this long after the session ended
 *   DTNC_TIME_LIMIT_MS     end at the latest this long after DTNC_T0_MS
 *   DTNC_T0_MS             the role's start (ms since the epoch; default now)
 *   DTNC_WORKDIR           the sender writes the block's file here
 *   DTNC_READY_FILE        created once the client service is open, so that
 *                          endpoint.sh starts the LTP engine (and binds its
 *                          UDP port) only after the receiver can take data
 *
 * The block: byte i = (i * 31 + 7) % 251 (specs/ltp/wire.json "payload").
 *
 * What ION tells a client, and how it maps to the outcome (the outcome is
 * the last end notice seen for the first session):
 *   sender:   LtpExportSessionComplete -> completed (all red acknowledged,
 *             or an all-green block fully transmitted: ION closes green
 *             exports on sending the EOB), LtpExportSessionCanceled ->
 *             cancelled.  LtpXmitComplete only says the first transmission
 *             ended; it ends nothing.
 *   receiver: LtpRecvRedPart (red part complete) and LtpRecvGreenSegment
 *             (one per green segment, endOfBlock set on the green EOB) are
 *             the only deliveries; ION has no "import session complete"
 *             notice.  So: red part delivered and the end of block known
 *             (RecvRedPart's endOfBlock flag, or a green segment flagged
 *             EOB) -> completed; no red part, DTNC_RED_LEN 0 and a green
 *             segment flagged EOB -> closed (ION tells nothing more for an
 *             all-green import: the EOB segment is its last word);
 *             LtpImportSessionCanceled -> cancelled.  A red part without
 *             the EOB, or nothing at all, at the time limit -> open (the
 *             delivered bytes are kept in the counters).
 * Cancel reason codes are RFC 5326's (ION's LtpCancelReasonCode):
 * 0 USR_CNCLD, 1 UNREACH, 2 RLEXC, 3 MISCOLORED, 4 SYS_CNCLD.
 *
 * stdout carries only the final JSON line; everything else goes to stderr.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "ltp.h"
#include "zco.h"
#include "ion.h"

#define MAX_NOTICES 400
/* green segments received, for their distinct bytes: a segment that
 * arrives twice (a duplicate) is notified twice (RFC 5326 6.10) but
 * delivers its bytes once (green_bytes_delivered counts distinct bytes,
 * as every harness does: docs/implementers.md) */
#define MAX_GREEN 4096

static const char *reason_names[] = {"USR_CNCLD", "UNREACH", "RLEXC", "MISCOLORED",
				     "SYS_CNCLD", "RXMTCYCEXC"};

static struct
{
	int is_sender;
	unsigned int svc;
	long long t0_ms;
	long long deadline_ms;
	long long linger_ms;
	/* result state, guarded by lock */
	pthread_mutex_t lock;
	const char *outcome;
	char detail[512];
	char *notices[MAX_NOTICES];
	int notice_count;
	int notices_dropped;
	long long red_bytes;
	long long green_off[MAX_GREEN];
	long long green_end[MAX_GREEN];
	int green_count;
	long long green_lost;	/* bytes of green segments past MAX_GREEN */
	int payload_checked;	/* any byte checked */
	int payload_bad;
	int printed;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER};

static volatile sig_atomic_t stop_signal = 0;
static volatile int main_done = 0;

/* The distinct green bytes received (under st.lock): the segments'
 * ranges merged, in offset order. */
static long long green_bytes(void)
{
	long long total = st.green_lost, upto = 0;
	int i, j;

	for (i = 1; i < st.green_count; i++)	/* insertion sort by offset */
	{
		long long o = st.green_off[i], e = st.green_end[i];

		for (j = i; j > 0 && st.green_off[j - 1] > o; j--)
		{
			st.green_off[j] = st.green_off[j - 1];
			st.green_end[j] = st.green_end[j - 1];
		}
		st.green_off[j] = o;
		st.green_end[j] = e;
	}
	for (i = 0; i < st.green_count; i++)
	{
		long long from = st.green_off[i] > upto ? st.green_off[i] : upto;

		if (st.green_end[i] > from)
		{
			total += st.green_end[i] - from;
		}
		if (st.green_end[i] > upto)
		{
			upto = st.green_end[i];
		}
	}
	return total;
}

static long long now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (long long) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void logmsg(const char *fmt, ...)
{
	va_list ap;
	long long t = now_ms();

	fprintf(stderr, "[%lld.%03lld dtnc-ion-ltp] ", t / 1000, t % 1000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static long long env_ll(const char *name, long long dflt, int required)
{
	const char *v = getenv(name);
	char *end;
	long long x;

	if (v == NULL || *v == '\0')
	{
		if (required)
		{
			fprintf(stderr, "missing %s\n", name);
			return -1;
		}
		return dflt;
	}
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end != '\0' || x < 0)
	{
		fprintf(stderr, "bad %s=%s\n", name, v);
		return -1;
	}
	return x;
}

static unsigned char pattern(unsigned long long i)
{
	return (unsigned char) ((i * 31 + 7) % 251);
}

static void add_notice(const char *fmt, ...)
{
	va_list ap;
	char buf[160];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	logmsg("notice %s", buf);
	pthread_mutex_lock(&st.lock);
	if (st.notice_count < MAX_NOTICES)
	{
		st.notices[st.notice_count++] = strdup(buf);
	}
	else
	{
		st.notices_dropped++;
	}
	pthread_mutex_unlock(&st.lock);
}

static void set_outcome(const char *outcome, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&st.lock);
	st.outcome = outcome;
	va_start(ap, fmt);
	vsnprintf(st.detail, sizeof st.detail, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&st.lock);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
		{
			fprintf(f, "\\%c", c);
		}
		else if (c < 0x20)
		{
			fprintf(f, "\\u%04x", c);
		}
		else
		{
			fputc(c, f);
		}
	}
	fputc('"', f);
}

/*	Prints the one result line, once.				*/
static void emit(const char *extra_detail)
{
	int i;
	char detail[700];

	pthread_mutex_lock(&st.lock);
	if (st.printed)
	{
		pthread_mutex_unlock(&st.lock);
		return;
	}
	st.printed = 1;
	snprintf(detail, sizeof detail, "%s%s%s", st.detail,
		 (extra_detail && *st.detail) ? "; " : "", extra_detail ? extra_detail : "");
	printf("{\"role\":\"%s\",\"outcome\":\"%s\",", st.is_sender ? "sender" : "receiver",
	       st.outcome);
	if (!st.is_sender)
	{
		printf("\"red_bytes_delivered\":%lld,\"green_bytes_delivered\":%lld,"
		       "\"payload_ok\":%s,",
		       st.red_bytes, green_bytes(),
		       st.payload_checked ? (st.payload_bad ? "false" : "true") : "null");
		/* where each green notice's data starts: distinct offsets, in
		 * order (green_bytes sorted them); unknown past MAX_GREEN */
		if (st.green_lost == 0)
		{
			printf("\"green_offsets\":[");
			for (i = 0; i < st.green_count; i++)
			{
				if (i && st.green_off[i] == st.green_off[i - 1])
				{
					continue;
				}
				printf("%s%lld", i ? "," : "", st.green_off[i]);
			}
			printf("],");
		}
	}
	printf("\"detail\":");
	json_str(stdout, detail);
	printf(",\"notices\":[");
	for (i = 0; i < st.notice_count; i++)
	{
		if (i)
		{
			putchar(',');
		}
		json_str(stdout, st.notices[i]);
	}
	if (st.notices_dropped)
	{
		char more[64];

		snprintf(more, sizeof more, "... %d more", st.notices_dropped);
		if (st.notice_count)
		{
			putchar(',');
		}
		json_str(stdout, more);
	}
	printf("],\"engine\":\"ION\",\"duration_s\":%.3f}\n", (now_ms() - st.t0_ms) / 1000.0);
	fflush(stdout);
	pthread_mutex_unlock(&st.lock);
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

/*	Wakes ltp_get_notice every 50 ms so that the main loop can watch its
 *	deadlines and signals; if the main thread is stuck inside ION (e.g.
 *	in ltp_send) well past the time limit, reports and ends the process. */
static void *ticker(void *arg)
{
	(void) arg;
	while (!main_done)
	{
		usleep(50000);
		ltp_interrupt(st.svc);
		if (now_ms() > st.deadline_ms + 2000)
		{
			if (!main_done)
			{
				emit("the client was stuck in an ION call past its time limit");
				_exit(0);
			}
		}
	}
	return NULL;
}

/*	Checks "len" bytes of ZCO "data" against the pattern at block offset
 *	"offset".							*/
static void check_zco(Object data, unsigned long long offset, unsigned long long len)
{
	Sdr sdr = getIonsdr();
	ZcoReader reader;
	unsigned char buf[65536];
	unsigned long long done = 0;
	int bad = 0;
	vast got;

	if (sdr_begin_xn(sdr) == 0)	/* 0: failed, 1: began */
	{
		bad = 1;
		goto out;
	}
	zco_start_receiving(data, &reader);
	while (done < len)
	{
		unsigned long long want = len - done;
		unsigned long long i;

		if (want > sizeof buf)
		{
			want = sizeof buf;
		}
		got = zco_receive_source(sdr, &reader, (vast) want, (char *) buf);
		if (got <= 0)
		{
			bad = 1;
			break;
		}
		for (i = 0; i < (unsigned long long) got; i++)
		{
			if (buf[i] != pattern(offset + done + i))
			{
				bad = 1;
			}
		}
		done += (unsigned long long) got;
	}
	if (sdr_end_xn(sdr) < 0)
	{
		bad = 1;
	}
out:
	pthread_mutex_lock(&st.lock);
	st.payload_checked = 1;
	if (bad)
	{
		st.payload_bad = 1;
	}
	pthread_mutex_unlock(&st.lock);
	if (bad)
	{
		logmsg("payload mismatch in %llu bytes at offset %llu", len, offset);
	}
}

static const char *reason_name(unsigned char r)
{
	return r < sizeof reason_names / sizeof reason_names[0] ? reason_names[r] : "unknown";
}

/*	Writes the block to a file in the work dir and wraps it in a ZCO.	*/
static Object make_block(const char *workdir, unsigned long long len, Object *fileRef)
{
	Sdr sdr = getIonsdr();
	char path[1024];
	unsigned char buf[65536];
	unsigned long long i = 0;
	int fd;
	Object zco;

	snprintf(path, sizeof path, "%s/block.dat", workdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
	{
		return 0;
	}
	while (i < len)
	{
		size_t n = len - i > sizeof buf ? sizeof buf : (size_t) (len - i);
		size_t k;

		for (k = 0; k < n; k++)
		{
			buf[k] = pattern(i + k);
		}
		if (write(fd, buf, n) != (ssize_t) n)
		{
			close(fd);
			return 0;
		}
		i += n;
	}
	close(fd);
	if (sdr_begin_xn(sdr) == 0)	/* 0: failed, 1: began */
	{
		return 0;
	}
	*fileRef = zco_create_file_ref(sdr, path, NULL, ZcoOutbound);
	if (sdr_end_xn(sdr) < 0 || *fileRef == 0)
	{
		return 0;
	}
	zco = ionCreateZco(ZcoFileSource, *fileRef, 0, (vast) len, 0, 0, ZcoOutbound, NULL);
	if (zco == (Object) ERROR)
	{
		return 0;
	}
	return zco;
}

int main(void)
{
	const char *role = getenv("DTNC_ROLE");
	const char *workdir = getenv("DTNC_WORKDIR");
	const char *ready = getenv("DTNC_READY_FILE");
	long long peer, block_len, red_len, svc, linger, limit, t0;
	LtpSessionId sid = {0, 0};
	int have_session = 0;
	long long end_at = -1;	/* the last end notice (ms), -1: none yet; the
				 * linger counts from it */
	int red_done = 0, eob_seen = 0;
	Object fileRef = 0;
	pthread_t tick;
	struct sigaction sa;

	st.t0_ms = now_ms();
	st.outcome = "error";
	st.is_sender = role && strcmp(role, "sender") == 0;
	t0 = env_ll("DTNC_T0_MS", st.t0_ms, 0);
	peer = env_ll("DTNC_PEER_ENGINE", 0, st.is_sender);
	block_len = env_ll("DTNC_BLOCK_LEN", 0, st.is_sender);
	red_len = env_ll("DTNC_RED_LEN", -1, 1);
	svc = env_ll("DTNC_CLIENT_SERVICE_ID", 0, 1);
	linger = env_ll("DTNC_LINGER_MS", 0, 1);
	limit = env_ll("DTNC_TIME_LIMIT_MS", 0, 1);
	if (t0 > 0)
	{
		st.t0_ms = t0;
	}
	if (role == NULL || (!st.is_sender && strcmp(role, "receiver") != 0) || peer < 0
	    || block_len < 0 || red_len < 0 || svc < 0 || linger < 0 || limit < 0
	    || (st.is_sender && (workdir == NULL || red_len > block_len)))
	{
		set_outcome("error", "bad or missing DTNC_* settings (see stderr)");
		emit(NULL);
		return 1;
	}
	st.svc = (unsigned int) svc;
	st.linger_ms = linger;
	st.deadline_ms = st.t0_ms + limit;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (ltp_attach() < 0)
	{
		set_outcome("error", "ltp_attach failed: is the ION node running?");
		emit(NULL);
		return 1;
	}
	/*	Both roles open the service: ION posts a sender's export
	 *	notices to the client service that sent the block.		*/
	if (ltp_open(st.svc) < 0)
	{
		set_outcome("error", "ltp_open(%u) failed", st.svc);
		emit(NULL);
		ltp_detach();
		return 1;
	}
	if (ready)
	{
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
		{
			close(fd);
		}
	}
	set_outcome("open", "no end notice before the time limit");
	pthread_create(&tick, NULL, ticker, NULL);

	if (st.is_sender)
	{
		Object zco;
		int rc;

		while (!ltp_engine_is_started() && now_ms() < st.deadline_ms && !stop_signal)
		{
			usleep(20000);
		}
		if (!ltp_engine_is_started())
		{
			set_outcome("error", "the LTP engine did not start");
			goto done;
		}
		zco = make_block(workdir, (unsigned long long) block_len, &fileRef);
		if (zco == 0)
		{
			set_outcome("error", "could not make the block's ZCO");
			goto done;
		}
		rc = ltp_send((uvast) peer, st.svc, zco, (unsigned int) red_len, &sid);
		if (rc <= 0)
		{
			set_outcome("error", "ltp_send returned %d", rc);
			goto done;
		}
		have_session = 1;
		logmsg("ltp_send: session %u, %lld bytes, %lld red, to engine %lld on service %u",
		       sid.sessionNbr, block_len, red_len, peer, st.svc);
	}

	while (1)
	{
		LtpNoticeType type;
		LtpSessionId nsid;
		unsigned char reason = 0, eob = 0;
		unsigned int off = 0, len = 0;
		Object data = 0;
		long long t = now_ms();

		if (stop_signal)
		{
			char sig[64];

			snprintf(sig, sizeof sig, "stopped by signal %d", (int) stop_signal);
			if (end_at < 0)
			{
				set_outcome("open", "%s before any end notice", sig);
			}
			else
			{
				pthread_mutex_lock(&st.lock);
				strncat(st.detail, "; ", sizeof st.detail - strlen(st.detail) - 1);
				strncat(st.detail, sig, sizeof st.detail - strlen(st.detail) - 1);
				pthread_mutex_unlock(&st.lock);
			}
			break;
		}
		if (t >= st.deadline_ms)
		{
			if (end_at < 0 && !st.is_sender && red_done)
			{
				set_outcome("open", "red part delivered, but the end of block never "
					    "seen by the time limit");
			}
			break;
		}
		if (end_at >= 0 && t >= end_at + st.linger_ms)
		{
			break;
		}
		if (ltp_get_notice(st.svc, &type, &nsid, &reason, &eob, &off, &len, &data) < 0)
		{
			if (end_at < 0)
			{
				set_outcome("open", "ltp_get_notice failed (LTP stopped?) before any "
					    "end notice");
			}
			break;
		}
		if (type == LtpNoNotice)
		{
			continue;	/* interrupted by the ticker */
		}
		if (!have_session)
		{
			sid = nsid;
			have_session = 1;
		}
		if (nsid.sourceEngineId != sid.sourceEngineId || nsid.sessionNbr != sid.sessionNbr)
		{
			add_notice("other-session(" UVAST_FIELDSPEC ",%u,type=%d)",
				   nsid.sourceEngineId, nsid.sessionNbr, (int) type);
			if (data)
			{
				ltp_release_data(data);
			}
			continue;
		}
		switch (type)
		{
		case LtpExportSessionStart:
			add_notice("ExportSessionStart");
			break;
		case LtpXmitComplete:
			add_notice("XmitComplete");
			break;
		case LtpExportSessionComplete:
			add_notice("ExportSessionComplete");
			set_outcome("completed", "ExportSessionComplete for session %u",
				    nsid.sessionNbr);
			end_at = now_ms();
			break;
		case LtpExportSessionCanceled:
			add_notice("ExportSessionCanceled(reason=%u %s)", reason, reason_name(reason));
			set_outcome("cancelled", "ExportSessionCanceled, reason code %u (%s)", reason,
				    reason_name(reason));
			end_at = now_ms();
			break;
		case LtpImportSessionCanceled:
			add_notice("ImportSessionCanceled(reason=%u %s)", reason, reason_name(reason));
			set_outcome("cancelled", "ImportSessionCanceled, reason code %u (%s)", reason,
				    reason_name(reason));
			end_at = now_ms();
			break;
		case LtpRecvRedPart:
			add_notice("RecvRedPart(len=%u,eob=%u)", len, eob);
			check_zco(data, 0, len);
			pthread_mutex_lock(&st.lock);
			st.red_bytes += len;
			pthread_mutex_unlock(&st.lock);
			red_done = 1;
			if (eob)
			{
				eob_seen = 1;
			}
			if (eob_seen)
			{
				set_outcome("completed", "RecvRedPart (%u bytes), end of block seen", len);
				end_at = now_ms();
			}
			break;
		case LtpRecvGreenSegment:
			add_notice("RecvGreenSegment(off=%u,len=%u,eob=%u)", off, len, eob);
			check_zco(data, off, len);
			pthread_mutex_lock(&st.lock);
			if (st.green_count < MAX_GREEN)
			{
				st.green_off[st.green_count] = off;
				st.green_end[st.green_count] = (long long) off + len;
				st.green_count++;
			}
			else
			{
				st.green_lost += len;
			}
			pthread_mutex_unlock(&st.lock);
			if (eob)
			{
				eob_seen = 1;
				if (red_done)
				{
					set_outcome("completed", "RecvRedPart, then the green EOB");
					end_at = now_ms();
				}
				else if (red_len == 0)
				{
					set_outcome("closed", "all-green block: green EOB received "
						    "(ION gives no other end notice for it)");
					end_at = now_ms();
				}
			}
			break;
		default:
			add_notice("unknown(type=%d)", (int) type);
			break;
		}
		if (data)
		{
			ltp_release_data(data);
		}
	}

done:
	main_done = 1;
	pthread_join(tick, NULL);
	if (fileRef)
	{
		Sdr sdr = getIonsdr();

		if (sdr_begin_xn(sdr))
		{
			zco_destroy_file_ref(sdr, fileRef);
			sdr_end_xn(sdr);
		}
	}
	ltp_close(st.svc);
	ltp_detach();
	emit(NULL);
	return 0;
}
