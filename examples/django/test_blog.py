import pytest

from blog.models import Author


@pytest.mark.django_db
@pytest.mark.parametrize("i", range(9))
def test_create(i):
    assert Author.objects.create(email="same@example.com").id == 2  # rewound after every test


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("i", range(3))
def test_committed(i):
    assert Author.objects.count() == 1
    assert Author.objects.create(email="c@example.com").id == 2


def test_no_db():
    assert True
