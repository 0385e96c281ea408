package io.kvoffload.strategy;

/**
 * The units of a layer's stored layout as a strategy sees them when it opens the layer: unit
 * {@code u} holds {@link #size(int) size(u)} token positions, together covering every laid-out
 * token — consecutive pages for the default layout, Swarm's co-activation clusters (with replicas:
 * a token may be in several units) and positional blocks after {@code Swarm.clusterLayer}. A strategy
 * that ranks the layout's own units fetches whole units, which the scheduler reads as few extents.
 * Valid only during {@link SelectionStrategy#openLayer}.
 */
public interface LayoutUnits {
    /** Units in the layout. */
    int count();

    /** Token positions unit {@code unit} holds. */
    int size(int unit);

    /** The {@code i}-th position of unit {@code unit}, {@code i} in {@code [0, size(unit))}. */
    int member(int unit, int i);

    /** Units formed by co-activation (Swarm's offline phase), 0 for a positional layout. */
    int coActivationUnits();
}
