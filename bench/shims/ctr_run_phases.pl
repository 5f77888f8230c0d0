#!/usr/bin/perl
# ctr_run_phases.pl: where the time of `ctr run --rm ... /bin/true` and of
# `ctr task exec ... /bin/true` goes, per shim, from the kernel's fork, exec
# and exit events. Record them around a bench run, e.g.
#
#   perf record -e sched:sched_process_fork -e sched:sched_process_exec \
#     -e sched:sched_process_exit -a -o /tmp/sched.data -- \
#     build/release/bench/shims/bench_shims --phases run,exec
#   perf script -i /tmp/sched.data | bench/shims/ctr_run_phases.pl
#
# A run starts at the exec of ctr and ends at its exit. In a `ctr run --rm`
# the shim is exec'd three times (start, the server, and the `delete` action
# containerd runs after the server exits) and the OCI runtime four times
# (create, start, delete, and delete --force from the delete action). In a
# `ctr task exec` the runtime is exec'd once (exec --detach) by a shim
# server, which the fork events name. Other runs (ctr run -d, ctr task
# delete, ...) are skipped. Prints the median of each segment per variant
# (hull/runc, Go/runc, hull/crun), in ms.
use strict;
use warnings;

my (@runs, $cur, %shim_kind, %parent);
while (my $line = <STDIN>) {
  my ($ts, $ev, $rest) = $line =~ /\s([\d.]+):\s+sched:(sched_process_\w+):\s+(.*)$/ or next;
  if ($ev eq 'sched_process_fork') {
    # The event runs in the forking thread: with `-F ...,pid,tid,...` the
    # sample's "pid/tid" names its process (Go shims fork from any thread).
    my ($ppid) = $line =~ /^\s*\S.*?\s(\d+)\/\d+\s/;
    ($ppid) = $rest =~ /\bpid=(\d+)/ unless defined $ppid;
    my ($child) = $rest =~ /\bchild_pid=(\d+)/ or next;
    $parent{$child} = $ppid;
    next;
  }
  my ($pid) = $rest =~ /\bpid=(\d+)/;
  if ($ev eq 'sched_process_exec') {
    my ($file) = $rest =~ /filename=(\S+)/;
    if ($file =~ m{/containerd-shim-(\w+)-v2$}) {
      $shim_kind{$pid} = $1 eq 'hull' ? 'hull' : 'Go';
    }
    if ($file =~ m{/ctr$}) {
      $cur = {t0 => $ts, ctr => $pid, shim => [], rt => []};
      push @runs, $cur;
    } elsif (!$cur) {
      next;
    } elsif ($file =~ m{/containerd-shim-(\w+)-v2$}) {
      push @{$cur->{shim}}, {pid => $pid, exec => $ts};
    } elsif ($file =~ m{/(runc|crun)$}) {
      $cur->{runtime} = $1;
      push @{$cur->{rt}}, {pid => $pid, exec => $ts, parent => $parent{$pid}};
    } elsif ($file eq '/bin/true') {
      $cur->{true} = {pid => $pid, exec => $ts};
    }
  } elsif ($ev eq 'sched_process_exit' && $cur) {
    if ($pid == $cur->{ctr}) {
      $cur->{t1} //= $ts;
      next;
    }
    for my $p (@{$cur->{shim}}, @{$cur->{rt}}, ($cur->{true} // ())) {
      $p->{exit} //= $ts if $p->{pid} == $pid;
    }
  }
}

my @run_segments = (
  ['ctr + containerd: container, snapshot, bundle, until shim start', 'ctr', 's0'],
  ['shim start: exec until the server is exec\'d', 's0', 's1'],
  ['server up, Create (rootfs mount, stdio) until runtime create', 's1', 'rc'],
  ['runtime create', 'rc', 'rc_exit'],
  ['Create reply, ctr, Start call until runtime start', 'rc_exit', 'rs'],
  ['runtime start', 'rs', 'rs_exit'],
  ['/bin/true runs and exits', 'rs_exit', 'true_exit'],
  ['exit event, ctr wait, Delete call until runtime delete', 'true_exit', 'rd'],
  ['runtime delete', 'rd', 'rd_exit'],
  ['Delete reply, Shutdown, until the server has exited', 'rd_exit', 's1_exit'],
  ['containerd notices, execs the shim delete action', 's1_exit', 's2'],
  ['shim delete action (incl. runtime delete --force)', 's2', 's2_exit'],
  ['  of which runtime delete --force', 'rf', 'rf_exit'],
  ['containerd removes bundle, ctr removes container, exits', 's2_exit', 'end'],
  ['total', 'ctr', 'end'],
);
my @exec_segments = (
  ['ctr start-up, Exec and Start calls until runtime exec', 'ctr', 're'],
  ['runtime exec --detach', 're', 're_exit'],
  ['  of which until /bin/true is exec\'d', 're', 'true'],
  ['after the runtime exits: exit event, ctr wait, Delete, ctr exits', 're_exit', 'end'],
  ['total', 'ctr', 'end'],
);

my (%run_samples, %exec_samples);
for my $r (@runs) {
  next unless $r->{true} && defined $r->{t1} && defined $r->{true}{exit};
  my @shim = @{$r->{shim}};
  my @rt = @{$r->{rt}};
  next if grep { !defined $_->{exit} } @shim, @rt;
  if (@shim == 3 && @rt == 4) {
    my ($s0, $s1, $s2) = @shim;
    my ($rc, $rs, $rd, $rf) = @rt;
    my $variant = $shim_kind{$s0->{pid}} . '/' . $r->{runtime};
    push @{$run_samples{$variant}}, {
      ctr => $r->{t0}, s0 => $s0->{exec}, s1 => $s1->{exec}, s1_exit => $s1->{exit},
      s2 => $s2->{exec}, s2_exit => $s2->{exit}, rc => $rc->{exec}, rc_exit => $rc->{exit},
      rs => $rs->{exec}, rs_exit => $rs->{exit}, rd => $rd->{exec}, rd_exit => $rd->{exit},
      rf => $rf->{exec}, rf_exit => $rf->{exit}, true_exit => $r->{true}{exit}, end => $r->{t1}};
  } elsif (@shim == 0 && @rt == 1) {
    my $re = $rt[0];
    my $kind = defined $re->{parent} ? $shim_kind{$re->{parent}} : undef;
    next unless $kind;
    push @{$exec_samples{"$kind/$r->{runtime}"}}, {
      ctr => $r->{t0}, re => $re->{exec}, re_exit => $re->{exit}, true => $r->{true}{exec},
      end => $r->{t1}};
  }
}

sub median {
  my @v = sort { $a <=> $b } @_;
  return 'n/a' unless @v;
  my $m = @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
  return sprintf('%.1f', $m);
}

sub table {
  my ($title, $samples, $segments) = @_;
  my @variants = grep { $samples->{$_} } ('hull/runc', 'Go/runc', 'hull/crun');
  return unless @variants;
  print "$title\n\n";
  print '| segment (median ms) | ', join(' | ', @variants), " |\n";
  print '|---|', join('|', map {'---:'} @variants), "|\n";
  for my $s (@$segments) {
    my ($label, $from, $to) = @$s;
    my @cells = map {
      my $v = $_;
      median(map { ($_->{$to} - $_->{$from}) * 1000 } @{$samples->{$v}});
    } @variants;
    print "| $label | ", join(' | ', @cells), " |\n";
  }
  print '| runs | ', join(' | ', map { scalar @{$samples->{$_}} } @variants), " |\n\n";
}

table('`ctr run --rm busybox /bin/true`', \%run_samples, \@run_segments);
table('`ctr task exec /bin/true`', \%exec_samples, \@exec_segments);
