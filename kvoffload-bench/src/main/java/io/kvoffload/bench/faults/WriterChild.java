package io.kvoffload.bench.faults;

import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The writer the fault campaign kills with SIGKILL: commits new sequences, extends and deletes
 * old ones, and prints each acknowledgement ({@code COMMITTED id seed tokens}, {@code DELETING id},
 * {@code DELETED id}) only after the call returned, so the parent knows exactly what was durable.
 */
public final class WriterChild {
    private WriterChild() {}

    /** The data seed of a sequence, derived from its id so unacknowledged commits can be checked too. */
    static long seedOf(String id) {
        return CampaignData.mix(id.hashCode() * 0x9E3779B97F4A7C15L);
    }

    public static void main(String[] args) throws Exception {
        String backend = args[0];
        long seed = Long.parseLong(args[1]);
        List<Path> dirs = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            dirs.add(Path.of(args[i]));
        }
        Random rnd = new Random(seed);
        KvConfig cfg = FaultCampaignCommand.campaignConfig(dirs, backend).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            System.out.println("READY");
            System.out.flush();
            for (int n = 0; ; n++) {
                List<String> ids = e.sequences().stream().map(i -> i.id()).toList();
                int kind = rnd.nextInt(10);
                if (ids.size() > 40) {
                    kind = 9; // stay far from capacity: an eviction is not a loss, but it would read as one
                }
                if (kind < 5 || ids.isEmpty()) {
                    String id = "w" + Long.toHexString(seed) + "-" + n;
                    int tokens = 16 + rnd.nextInt(100);
                    try (KvSequence s = e.createSequence(id, CampaignData.SHAPE)) {
                        CampaignData.append(s, seedOf(id), tokens);
                        s.commit();
                    }
                    System.out.println("COMMITTED " + id + " " + seedOf(id) + " " + tokens);
                } else if (kind < 8) {
                    String id = ids.get(rnd.nextInt(ids.size()));
                    int tokens;
                    try (KvSequence s = e.openSequenceForAppend(id)) {
                        CampaignData.append(s, seedOf(id), 1 + rnd.nextInt(30));
                        s.commit();
                        tokens = s.tokenCount();
                    }
                    System.out.println("COMMITTED " + id + " " + seedOf(id) + " " + tokens);
                } else if (ids.size() > 4) {
                    String id = ids.get(rnd.nextInt(ids.size()));
                    System.out.println("DELETING " + id);
                    System.out.flush();
                    e.deleteSequence(id);
                    System.out.println("DELETED " + id);
                }
                System.out.flush();
            }
        }
    }
}
