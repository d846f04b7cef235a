"""The cross-lingual document classifier used by the CLDC task, isolated in this one function.

An averaged perceptron (scikit-learn's ``SGDClassifier(loss="perceptron", learning_rate=
"constant", eta0=1, penalty=None, average=True)`` is exactly the averaged multi-class perceptron
with a one-vs-rest decision). When ``linxling.evaluate`` gains its own averaged-perceptron CLDC
(being written on the "etter" branch), this function will be replaced by a call to it.
"""
from __future__ import annotations

import numpy as np


def train_and_score(X_train, y_train, X_test, y_test, *, epochs: int = 10, random_state: int = 0) -> float:
    """Fit on (X_train, y_train) (rows L2-normalised) and return accuracy on the test set."""
    from sklearn.linear_model import SGDClassifier

    def unit(X):
        X = np.asarray(X, dtype=np.float64)
        n = np.linalg.norm(X, axis=1, keepdims=True)
        return X / np.where(n > 0, n, 1.0)
    clf = SGDClassifier(loss="perceptron", learning_rate="constant", eta0=1.0, penalty=None,
                        average=True, max_iter=epochs, tol=None, shuffle=True,
                        random_state=random_state)
    clf.fit(unit(X_train), list(y_train))
    return float(np.mean(clf.predict(unit(X_test)) == np.asarray(list(y_test))))
